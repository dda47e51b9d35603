/** The authorization server's rows (migrations/0004_oauth.sql): plain SQL, one function per query. */
import type { Queryable } from '@adsmcp/runtime/db';

export type Payload = Record<string, unknown>;

export async function upsertPayload(
  db: Queryable,
  p: { kind: string; id: string; payload: Payload; expiresInSeconds: number | undefined },
): Promise<void> {
  const grantId = typeof p.payload.grantId === 'string' ? p.payload.grantId : null;
  const uid = typeof p.payload.uid === 'string' ? p.payload.uid : null;
  const userCode = typeof p.payload.userCode === 'string' ? p.payload.userCode : null;
  await db.query(
    `INSERT INTO oauth_payloads (kind, id, payload, grant_id, uid, user_code, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $7::int IS NULL THEN NULL ELSE now() + make_interval(secs => $7::int) END)
     ON CONFLICT (kind, id) DO UPDATE
       SET payload = EXCLUDED.payload, grant_id = EXCLUDED.grant_id, uid = EXCLUDED.uid,
           user_code = EXCLUDED.user_code, expires_at = EXCLUDED.expires_at`,
    [p.kind, p.id, JSON.stringify(p.payload), grantId, uid, userCode, p.expiresInSeconds ?? null],
  );
}

const LIVE_PAYLOAD = `SELECT payload, consumed_at FROM oauth_payloads`;
const NOT_EXPIRED = `(expires_at IS NULL OR expires_at > now())`;

interface PayloadRow {
  payload: Payload;
  consumed_at: Date | null;
}

/** The payload with `consumed` set as oidc-provider expects (seconds since the epoch). */
function withConsumed(row: PayloadRow | undefined): Payload | undefined {
  if (row === undefined) return undefined;
  if (row.consumed_at === null) return row.payload;
  return { ...row.payload, consumed: Math.floor(row.consumed_at.getTime() / 1000) };
}

export async function findPayload(db: Queryable, kind: string, id: string): Promise<Payload | undefined> {
  const { rows } = await db.query<PayloadRow>(
    `${LIVE_PAYLOAD} WHERE kind = $1 AND id = $2 AND ${NOT_EXPIRED}`,
    [kind, id],
  );
  return withConsumed(rows[0]);
}

export async function findPayloadByUid(
  db: Queryable,
  kind: string,
  uid: string,
): Promise<Payload | undefined> {
  const { rows } = await db.query<PayloadRow>(
    `${LIVE_PAYLOAD} WHERE kind = $1 AND uid = $2 AND ${NOT_EXPIRED}`,
    [kind, uid],
  );
  return withConsumed(rows[0]);
}

export async function findPayloadByUserCode(
  db: Queryable,
  kind: string,
  userCode: string,
): Promise<Payload | undefined> {
  const { rows } = await db.query<PayloadRow>(
    `${LIVE_PAYLOAD} WHERE kind = $1 AND user_code = $2 AND ${NOT_EXPIRED}`,
    [kind, userCode],
  );
  return withConsumed(rows[0]);
}

export async function consumePayload(db: Queryable, kind: string, id: string): Promise<void> {
  await db.query('UPDATE oauth_payloads SET consumed_at = now() WHERE kind = $1 AND id = $2', [kind, id]);
}

export async function destroyPayload(db: Queryable, kind: string, id: string): Promise<void> {
  await db.query('DELETE FROM oauth_payloads WHERE kind = $1 AND id = $2', [kind, id]);
}

/**
 * Ends what was issued under a grant, of one kind (the provider calls this for each kind it
 * revokes; ending the grant itself is its own call, which is heard as `grant.revoked`).
 */
export async function destroyByGrant(db: Queryable, kind: string, grantId: string): Promise<void> {
  await db.query('DELETE FROM oauth_payloads WHERE kind = $1 AND grant_id = $2', [kind, grantId]);
}

/** Links a grant to the credential that shows it in the connections list. */
export async function insertGrantCredential(
  db: Queryable,
  grantId: string,
  credentialId: string,
): Promise<void> {
  await db.query('INSERT INTO oauth_grant_credentials (grant_id, credential_id) VALUES ($1, $2)', [
    grantId,
    credentialId,
  ]);
}

/**
 * Marks a grant's credential revoked (the provider ended the grant: one of its tokens was revoked
 * at /oauth/revoke, or a code or rotated refresh token reused); returns the credential, or
 * undefined when it was already revoked.
 */
export async function revokeGrantCredential(
  db: Queryable,
  grantId: string,
): Promise<{ credential_id: string; workspace_id: string } | undefined> {
  const { rows } = await db.query<{ credential_id: string; workspace_id: string }>(
    `UPDATE credentials c SET revoked_at = now()
       FROM oauth_grant_credentials g
      WHERE g.grant_id = $1 AND c.id = g.credential_id AND c.revoked_at IS NULL
      RETURNING c.id AS credential_id, c.workspace_id`,
    [grantId],
  );
  return rows[0];
}

/** How a person decided an authorization request: one decision per request (interaction uid). */
export interface ConsentDecision {
  decision: 'approved' | 'declined';
  grant_id: string | null;
}

/**
 * Records the decision on authorization request `uid` and returns true, or false when it was
 * decided already (the primary key makes two concurrent claims one).
 */
export async function claimConsentDecision(
  db: Queryable,
  uid: string,
  decision: ConsentDecision['decision'],
): Promise<boolean> {
  const { rowCount } = await db.query(
    'INSERT INTO oauth_consent_decisions (uid, decision) VALUES ($1, $2) ON CONFLICT (uid) DO NOTHING',
    [uid, decision],
  );
  return rowCount === 1;
}

/** Names the grant an approval made, once the provider has its result. */
export async function setConsentGrant(db: Queryable, uid: string, grantId: string): Promise<void> {
  await db.query('UPDATE oauth_consent_decisions SET grant_id = $2 WHERE uid = $1', [uid, grantId]);
}

/** Forgets a decision that could not be carried out, so that the person may try again. */
export async function releaseConsentDecision(db: Queryable, uid: string): Promise<void> {
  await db.query('DELETE FROM oauth_consent_decisions WHERE uid = $1 AND grant_id IS NULL', [uid]);
}

/** The decision already made on authorization request `uid`, if any. */
export async function findConsentDecision(db: Queryable, uid: string): Promise<ConsentDecision | undefined> {
  const { rows } = await db.query<ConsentDecision>(
    'SELECT decision, grant_id FROM oauth_consent_decisions WHERE uid = $1',
    [uid],
  );
  return rows[0];
}

/**
 * The sweep's queries (sweep.ts). Each measures its cutoff back from `now`, or from the database's
 * clock when it is undefined (as the gateway runs them: every replica then agrees with the clock
 * the rows were written by); tests pass a later `now` instead of waiting.
 */
const NOW = 'coalesce($1::timestamptz, now())';

/**
 * Deletes up to `limit` provider rows that expired more than `graceSeconds` before `now`; returns
 * how many it deleted. Reads already ignore expired rows: the grace only keeps a row from vanishing
 * under a request that found it a moment before it expired.
 */
export async function deleteExpiredPayloads(
  db: Queryable,
  o: { now: Date | undefined; graceSeconds: number; limit: number },
): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM oauth_payloads
      WHERE (kind, id) IN (
        SELECT kind, id FROM oauth_payloads
         WHERE expires_at < ${NOW} - make_interval(secs => $2::int)
         LIMIT $3)`,
    [o.now ?? null, o.graceSeconds, o.limit],
  );
  return rowCount ?? 0;
}

/** Deletes the consent decisions made more than `keepSeconds` before `now`; returns how many. */
export async function deleteOldConsentDecisions(
  db: Queryable,
  o: { now: Date | undefined; keepSeconds: number },
): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM oauth_consent_decisions WHERE decided_at < ${NOW} - make_interval(secs => $2::int)`,
    [o.now ?? null, o.keepSeconds],
  );
  return rowCount ?? 0;
}

/** A connection the sweep revoked. */
export interface UnredeemedConnection {
  credential_id: string;
  workspace_id: string;
}

/** Why the sweep revoked a connection, as its audit entry says. */
export const NEVER_REDEEMED = 'the client never redeemed its authorization code';

/**
 * Revokes, with a `credential.revoked` audit entry each, the connections (credentials of kind
 * oauth) approved more than `afterSeconds` before `now`, not yet revoked or expired, under whose
 * grant no access or refresh token was ever issued (nor the connection used). One statement: the
 * audit entries are written for exactly the rows this call revoked, so replicas sweeping at once
 * revoke a connection once, with one entry (the grant's link is locked, and a credential revoked
 * meanwhile is skipped). The database then ends the grant (migration 0004's trigger) and tells
 * every replica (0003's).
 */
export async function revokeUnredeemedConnections(
  db: Queryable,
  o: { now: Date | undefined; afterSeconds: number },
): Promise<UnredeemedConnection[]> {
  const { rows } = await db.query<UnredeemedConnection>(
    `WITH unredeemed AS (
       SELECT g.credential_id, g.grant_id,
              (SELECT p.payload->>'clientId' FROM oauth_payloads p WHERE p.kind = 'Grant' AND p.id = g.grant_id) AS client_id
         FROM oauth_grant_credentials g JOIN credentials c ON c.id = g.credential_id
        WHERE g.redeemed_at IS NULL
          AND c.kind = 'oauth' AND c.revoked_at IS NULL AND c.last_used_at IS NULL
          AND c.created_at < ${NOW} - make_interval(secs => $2::int)
          AND (c.expires_at IS NULL OR c.expires_at > ${NOW})
          AND NOT EXISTS (
            SELECT 1 FROM oauth_payloads t
             WHERE t.grant_id = g.grant_id AND t.kind IN ('AccessToken', 'RefreshToken'))
        FOR UPDATE OF g
     ), revoked AS (
       UPDATE credentials c SET revoked_at = now()
         FROM unredeemed u
        WHERE c.id = u.credential_id AND c.revoked_at IS NULL
       RETURNING c.id, c.workspace_id, c.name, u.client_id
     )
     INSERT INTO audit_log (workspace_id, actor, action, target, detail)
     SELECT workspace_id, 'oauth', 'credential.revoked', id::text,
            jsonb_strip_nulls(jsonb_build_object('by', 'oauth sweep', 'reason', $3::text, 'name', name, 'oauth_client', client_id))
       FROM revoked
     RETURNING target AS credential_id, workspace_id`,
    [o.now ?? null, o.afterSeconds, NEVER_REDEEMED],
  );
  return rows;
}
