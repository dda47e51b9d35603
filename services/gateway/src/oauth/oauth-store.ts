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
