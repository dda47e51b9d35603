/**
 * The gateway's OAuth sweep (src/oauth/sweep.ts) against the whole stack on a real PostgreSQL:
 * connections made through the real flow (the v1 SDK's registration and PKCE, sign-in and Approve
 * clicked in Chromium, the code exchanged or not), then the sweep called directly. Time is the only
 * thing faked: a sweep is given a later `now` (a fake clock) instead of the test waiting half an
 * hour or a month. The last tests restart the gateway to see it sweep on its own at start-up, and
 * run the sweep's timer in-process.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createPool, type Pool } from '@adsmcp/runtime/db';
import { launchBrowser } from '@adsmcp/testkit/browser';
import { addPerson, type DashboardPerson } from '@adsmcp/testkit/dashboard';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import {
  type MemoryOAuthClient,
  type OAuthCallback,
  signInToConsent,
  startOAuthCallback,
} from '@adsmcp/testkit/oauth-client';
import type { Stack } from '@adsmcp/testkit/stack';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import pg from 'pg';
import type { Browser, BrowserContext } from 'playwright-core';
import { NEVER_REDEEMED } from '../src/oauth/oauth-store.ts';
import {
  startOAuthSweep,
  sweepConsentDecisions,
  sweepExpiredPayloads,
  sweepOAuth,
  sweepUnredeemedConnections,
  UNREDEEMED_AFTER_SECONDS,
} from '../src/oauth/sweep.ts';

const MINUTE_MS = 60 * 1000;
const DAY_MS = 24 * 60 * MINUTE_MS;

let e2e: SeededStack;
let stack: Stack;
let browser: Browser;
/** The test's own pools on the gateway's schema: the sweep is called on them as a replica would. */
let pool: Pool;
let otherPool: Pool;
let who: DashboardPerson;
/** The client's loopback redirect endpoint: it records each authorization response it receives. */
let callback: OAuthCallback;

interface Approved {
  client: MemoryOAuthClient;
  /** The authorization code the client received (not yet exchanged). */
  code: string;
  /** The connection approving made: its credential. */
  credentialId: string;
  grantId: string;
  /** When the connection was recorded, by the database's clock. */
  createdAt: Date;
  /** The browser, still signed in to the dashboard; the caller closes it. */
  context: BrowserContext;
}

/**
 * The SDK's flow up to the code: discovery and registration, the authorization request opened in
 * Chromium where the person signs in and clicks Approve, the code received at the client's
 * redirect URI. The code is not exchanged.
 */
async function approve(client: MemoryOAuthClient): Promise<Approved> {
  assert.equal(await auth(client, { serverUrl: stack.mcpUrl }), 'REDIRECT');
  const url = client.authorizationUrl;
  assert.ok(url, 'the SDK asked for the authorization page');
  const context = await browser.newContext();
  const page = await context.newPage();
  await signInToConsent(page, url, who);
  const before = callback.responses.length;
  await Promise.all([
    page.waitForURL((u) => u.toString().startsWith(callback.redirectUrl)),
    page.click('#approve'),
  ]);
  const code = callback.responses[before]?.searchParams.get('code');
  assert.ok(code, 'an authorization code came back');
  const { rows } = await pool.query<{ id: string; grant_id: string; created_at: Date }>(
    `SELECT c.id, g.grant_id, c.created_at FROM credentials c JOIN oauth_grant_credentials g ON g.credential_id = c.id
      WHERE c.name = $1 AND c.kind = 'oauth'`,
    [client.name],
  );
  assert.equal(rows.length, 1, 'approving made one connection');
  const row = rows[0] as { id: string; grant_id: string; created_at: Date };
  return { client, code, credentialId: row.id, grantId: row.grant_id, createdAt: row.created_at, context };
}

/** The client exchanges `code` at the token endpoint, as the SDK does: the status and the answer. */
async function redeem(a: Approved): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${stack.gatewayUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: a.code,
      redirect_uri: callback.redirectUrl,
      code_verifier: a.client.verifier,
      client_id: String(a.client.info?.client_id),
      resource: stack.mcpUrl,
    }).toString(),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

interface Listed {
  credential_id: string;
  revoked_at: string | null;
}

/** The connection as `admin list-tokens` lists it. */
async function listed(credentialId: string): Promise<Listed | undefined> {
  const all = JSON.parse(await stack.admin(['list-tokens', '--workspace', e2e.seed.workspaceId])) as Listed[];
  return all.find((c) => c.credential_id === credentialId);
}

/** The names of the connections the dashboard's connections page lists in `state`, searched by `name`. */
async function dashboardLists(context: BrowserContext, state: string, name: string): Promise<boolean> {
  const res = await context.request.get(
    `${stack.gatewayUrl}/dashboard/connections?state=${state}&q=${encodeURIComponent(name)}`,
  );
  assert.equal(res.status(), 200);
  // Cells carry their column's label for narrow screens (data-label) before their class.
  return (await res.text()).includes(`class="name">${name}</td>`);
}

interface AuditRow {
  actor: string;
  detail: Record<string, unknown>;
}

async function revokedAudit(credentialId: string): Promise<AuditRow[]> {
  const { rows } = await pool.query<AuditRow>(
    `SELECT actor, detail FROM audit_log WHERE action = 'credential.revoked' AND target = $1`,
    [credentialId],
  );
  return rows;
}

async function revokedAt(credentialId: string): Promise<Date | null> {
  const { rows } = await pool.query<{ revoked_at: Date | null }>(
    'SELECT revoked_at FROM credentials WHERE id = $1',
    [credentialId],
  );
  return rows[0]?.revoked_at ?? null;
}

async function payloadIds(): Promise<Set<string>> {
  const { rows } = await pool.query<{ id: string }>('SELECT id FROM oauth_payloads');
  return new Set(rows.map((r) => r.id));
}

/** A provider row as the storage adapter writes one, expiring `expiresInMs` from the database's now. */
async function payload(kind: string, expiresInMs: number | null): Promise<string> {
  const id = `sweep-test-${randomUUID()}`;
  await pool.query(
    `INSERT INTO oauth_payloads (kind, id, payload, expires_at)
     VALUES ($1, $2, $3, CASE WHEN $4::float8 IS NULL THEN NULL ELSE now() + $4::float8 * interval '1 millisecond' END)`,
    [kind, id, JSON.stringify({ jti: id, kind }), expiresInMs],
  );
  return id;
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

const unique = (name: string) => `${name} ${randomUUID().slice(0, 8)}`;

before(async () => {
  e2e = await startSeededStack();
  stack = e2e.stack;
  browser = await launchBrowser();
  callback = await startOAuthCallback();
  pool = createPool(e2e.db.url, 'gateway');
  otherPool = createPool(e2e.db.url, 'gateway');
  who = await addPerson(stack, e2e.seed.workspaceId, 'editor', 'sweep@demo.example', 'sweep-password-1');
});

after(async () => {
  await browser?.close();
  await callback?.close();
  await pool?.end();
  await otherPool?.end();
  await e2e?.stop();
});

describe('the OAuth sweep', () => {
  test('deletes provider rows expired past the hour of grace; keeps those not expired, expired within the grace, or without expiry', async () => {
    const gone = [await payload('AccessToken', -2 * 60 * MINUTE_MS), await payload('Interaction', -DAY_MS)];
    const kept = [
      await payload('AccessToken', 10 * MINUTE_MS),
      await payload('AuthorizationCode', -10 * MINUTE_MS),
      await payload('Session', -50 * MINUTE_MS),
      await payload('Client', null),
    ];
    // The database's clock, as the gateway runs it.
    await sweepExpiredPayloads(pool);
    const ids = await payloadIds();
    for (const id of gone) assert.equal(ids.has(id), false, `${id} expired past the grace is deleted`);
    for (const id of kept) assert.equal(ids.has(id), true, `${id} is kept`);
  });

  test('deletes consent decisions older than a day and the request’s life; keeps recent ones', async () => {
    const old = `sweep-old-${randomUUID()}`;
    const recent = `sweep-recent-${randomUUID()}`;
    const lastHour = `sweep-hour-${randomUUID()}`;
    await pool.query(
      `INSERT INTO oauth_consent_decisions (uid, decision, decided_at) VALUES
         ($1, 'approved', now() - interval '2 days'), ($2, 'declined', now() - interval '20 hours'),
         ($3, 'approved', now() - interval '1 hour')`,
      [old, recent, lastHour],
    );
    await sweepConsentDecisions(pool);
    const { rows } = await pool.query<{ uid: string }>(
      'SELECT uid FROM oauth_consent_decisions WHERE uid = ANY($1)',
      [[old, recent, lastHour]],
    );
    assert.deepEqual(new Set(rows.map((r) => r.uid)), new Set([recent, lastHour]));
  });

  test('a connection approved but never redeemed is left alone while its code may still be issued and redeemed', async () => {
    const a = await approve(callback.client(unique('Slow agent')));
    try {
      // The fake clock: just inside the window (the request's 15 minutes, the code's minute, the margin).
      const inside = new Date(a.createdAt.getTime() + UNREDEEMED_AFTER_SECONDS * 1000 - MINUTE_MS);
      for (const now of [undefined, new Date(a.createdAt.getTime() + 5 * MINUTE_MS), inside]) {
        const revoked = await sweepUnredeemedConnections(pool, now);
        assert.ok(
          !revoked.some((c) => c.credential_id === a.credentialId),
          `untouched at ${now?.toISOString()}`,
        );
      }
      assert.equal(await revokedAt(a.credentialId), null);
      assert.equal((await listed(a.credentialId))?.revoked_at, null);
      assert.deepEqual(await revokedAudit(a.credentialId), []);
      // And the client, late but in time, still gets its tokens.
      const late = await redeem(a);
      assert.equal(late.status, 200, JSON.stringify(late.body));
      assert.ok(late.body.access_token);
    } finally {
      await a.context.close();
    }
  });

  test('a connection approved but never redeemed is revoked once its code has expired, with its audit entry, and is listed revoked', async () => {
    const a = await approve(callback.client(unique('Abandoning agent')));
    try {
      assert.equal(await dashboardLists(a.context, 'active', a.client.name), true, 'listed active at first');
      const later = new Date(a.createdAt.getTime() + UNREDEEMED_AFTER_SECONDS * 1000 + MINUTE_MS);
      const revoked = await sweepUnredeemedConnections(pool, later);
      assert.deepEqual(
        revoked.filter((c) => c.credential_id === a.credentialId),
        [{ credential_id: a.credentialId, workspace_id: e2e.seed.workspaceId }],
      );
      // Its grant ended with it: the code (still within its real minute) is refused.
      const refused = await redeem(a);
      assert.equal(refused.status, 400, JSON.stringify(refused.body));
      assert.equal(refused.body.error, 'invalid_grant');
      const { rows } = await pool.query('SELECT kind FROM oauth_payloads WHERE grant_id = $1 OR id = $1', [
        a.grantId,
      ]);
      assert.deepEqual(rows, [], 'the grant and its code are gone');

      assert.ok(await revokedAt(a.credentialId));
      assert.ok((await listed(a.credentialId))?.revoked_at, 'admin list-tokens lists it revoked');
      assert.equal(await dashboardLists(a.context, 'active', a.client.name), false, 'no longer active');
      assert.equal(await dashboardLists(a.context, 'revoked', a.client.name), true, 'listed revoked');
      const audit = await revokedAudit(a.credentialId);
      assert.equal(audit.length, 1);
      assert.equal(audit[0]?.actor, 'oauth');
      assert.deepEqual(audit[0]?.detail, {
        by: 'oauth sweep',
        reason: NEVER_REDEEMED,
        name: a.client.name,
        oauth_client: a.client.info?.client_id,
      });
      assert.equal(NEVER_REDEEMED, 'the client never redeemed its authorization code');

      // Swept again: nothing more.
      const again = await sweepUnredeemedConnections(pool, later);
      assert.ok(!again.some((c) => c.credential_id === a.credentialId));
      assert.equal((await revokedAudit(a.credentialId)).length, 1);
    } finally {
      await a.context.close();
    }
  });

  test('two sweeps at once revoke a connection once, with one audit entry', async () => {
    const a = await approve(callback.client(unique('Raced agent')));
    await a.context.close();
    const later = new Date(a.createdAt.getTime() + UNREDEEMED_AFTER_SECONDS * 1000 + MINUTE_MS);
    // Hold the connection's row so that both sweeps reach it and wait, then let them go together.
    const blocker = await pool.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT 1 FROM credentials WHERE id = $1 FOR UPDATE', [a.credentialId]);
      const sweeps = Promise.all([
        sweepUnredeemedConnections(pool, later),
        sweepUnredeemedConnections(otherPool, later),
      ]);
      await waitFor('both sweeps to wait on the connection', async () => {
        const { rows } = await pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%unredeemed%'`,
        );
        return (rows[0]?.n ?? 0) >= 2;
      });
      await blocker.query('COMMIT');
      const [first, second] = await sweeps;
      const hits = [...first, ...second].filter((c) => c.credential_id === a.credentialId);
      assert.equal(hits.length, 1, 'one of the two revoked it');
    } finally {
      await blocker.query('ROLLBACK').catch(() => undefined);
      blocker.release();
    }
    assert.ok(await revokedAt(a.credentialId));
    assert.equal((await revokedAudit(a.credentialId)).length, 1);
  });

  test('a token saved by a session on another schema still marks its grant redeemed', async () => {
    const a = await approve(callback.client(unique('Elsewhere agent')));
    await a.context.close();
    // As a tool on the default search_path writes it (the e2e tests copy tokens so).
    const db = new pg.Client({ connectionString: e2e.db.url });
    await db.connect();
    try {
      await db.query(
        `INSERT INTO gateway.oauth_payloads (kind, id, payload, grant_id, expires_at)
         VALUES ('AccessToken', $1, '{}', $2, now() + interval '10 minutes')`,
        [`sweep-test-${randomUUID()}`, a.grantId],
      );
    } finally {
      await db.end();
    }
    const { rows } = await pool.query<{ redeemed_at: Date | null }>(
      'SELECT redeemed_at FROM oauth_grant_credentials WHERE grant_id = $1',
      [a.grantId],
    );
    assert.ok(rows[0]?.redeemed_at, 'the grant is marked redeemed');
    const later = new Date(a.createdAt.getTime() + UNREDEEMED_AFTER_SECONDS * 1000 + MINUTE_MS);
    await sweepOAuth(pool, { now: later });
    assert.equal(await revokedAt(a.credentialId), null);
  });

  test('a connection revoked by a session on another schema still ends its grant', async () => {
    const a = await approve(callback.client(unique('Revoked elsewhere agent')));
    await a.context.close();
    const grantRows = async () =>
      Number(
        (
          await pool.query<{ n: string }>(
            `SELECT count(*) AS n FROM oauth_payloads WHERE grant_id = $1 OR (kind = 'Grant' AND id = $1)`,
            [a.grantId],
          )
        ).rows[0]?.n,
      );
    assert.ok((await grantRows()) > 0, 'the grant has rows before');
    // As an operator's SQL on the default search_path revokes it.
    const db = new pg.Client({ connectionString: e2e.db.url });
    await db.connect();
    try {
      await db.query('UPDATE gateway.credentials SET revoked_at = now() WHERE id = $1', [a.credentialId]);
    } finally {
      await db.end();
    }
    assert.ok(await revokedAt(a.credentialId));
    assert.equal(await grantRows(), 0, 'the revocation ended the grant');
    const redeemed = await redeem(a);
    assert.equal(redeemed.status, 400);
    assert.equal(redeemed.body.error, 'invalid_grant');
  });

  test('the gateway sweeps at start-up, logging what it removed, and stops cleanly', async () => {
    const expired = await payload('AccessToken', -3 * 60 * MINUTE_MS);
    const fresh = await payload('AccessToken', 10 * MINUTE_MS);
    await stack.kill('gateway', 'SIGTERM');
    assert.equal(stack.process('gateway').exitCode, 0, 'the gateway stopped cleanly');
    await stack.restart('gateway');
    await waitFor('the gateway’s first sweep', async () => !(await payloadIds()).has(expired));
    assert.equal((await payloadIds()).has(fresh), true);
    await waitFor('the sweep’s log line', async () =>
      stack.recentOutput('gateway').some((l) => l.includes('OAuth sweep removed rows')),
    );
    const line = stack.recentOutput('gateway').find((l) => l.includes('OAuth sweep removed rows')) ?? '';
    assert.match(line, /"expired_payloads":[1-9]/);
  });

  test('the sweep’s timer runs at once and again, logs a failure without throwing, and stops', async () => {
    const lines: { level: string; msg: string; [k: string]: unknown }[] = [];
    const logger = {
      info: (obj: object, msg: string) => void lines.push({ level: 'info', msg, ...obj }),
      error: (obj: object, msg: string) => void lines.push({ level: 'error', msg, ...obj }),
    } as Parameters<typeof startOAuthSweep>[0]['logger'];
    let calls = 0;
    const failing = {
      query: async () => {
        calls += 1;
        throw new Error('the database is down');
      },
    } as unknown as Pool;
    const stopFailing = startOAuthSweep({ pool: failing, logger, everyMs: 20 });
    await waitFor(
      'failed runs to be logged',
      async () => lines.filter((l) => l.level === 'error').length >= 6,
    );
    await stopFailing();
    const failedSteps = new Set(lines.filter((l) => l.level === 'error').map((l) => l.step));
    assert.deepEqual(failedSteps, new Set(['connections', 'payloads', 'decisions']), 'each step is tried');
    const stoppedAt = calls;
    await sleep(100);
    assert.equal(calls, stoppedAt, 'nothing runs once stopped');

    lines.length = 0;
    const expired = await payload('Interaction', -2 * 60 * MINUTE_MS);
    const stop = startOAuthSweep({ pool, logger, everyMs: 20 });
    try {
      await waitFor('a run to delete it', async () => !(await payloadIds()).has(expired));
      await waitFor('the run’s log line', async () =>
        lines.some((l) => l.msg === 'OAuth sweep removed rows'),
      );
    } finally {
      await stop();
    }
  });

  // Last: a month on, every provider row of this stack has expired and is swept.
  test('a connection whose code was redeemed is never revoked, however old, even once its tokens are swept', async () => {
    // No refresh token: once its access token is swept, nothing of the grant but the grant is left.
    const a = await approve(callback.client(unique('Redeeming agent'), ['authorization_code']));
    const withRefresh = await approve(callback.client(unique('Refreshing agent')));
    try {
      for (const c of [a, withRefresh]) {
        const r = await redeem(c);
        assert.equal(r.status, 200, JSON.stringify(r.body));
      }
      // Never used at /mcp: nothing but the redemption marks it.
      const { rows } = await pool.query<{ last_used_at: Date | null }>(
        'SELECT last_used_at FROM credentials WHERE id = ANY($1)',
        [[a.credentialId, withRefresh.credentialId]],
      );
      assert.deepEqual(
        rows.map((r) => r.last_used_at),
        [null, null],
      );
      // A fake clock 29 days on (the connections expire at 30).
      const monthOn = new Date(Date.now() + 29 * DAY_MS);
      const result = await sweepOAuth(pool, { now: monthOn });
      assert.ok(result.payloads > 0);
      const tokens = await pool.query(
        `SELECT 1 FROM oauth_payloads WHERE grant_id = $1 AND kind IN ('AccessToken', 'RefreshToken')`,
        [a.grantId],
      );
      assert.equal(tokens.rowCount, 0, 'its expired access token was swept');
      const ids = result.connections.map((c) => c.credential_id);
      for (const c of [a, withRefresh]) {
        assert.ok(!ids.includes(c.credentialId), `${c.client.name} is not revoked`);
        assert.equal(await revokedAt(c.credentialId), null);
        assert.deepEqual(await revokedAudit(c.credentialId), []);
        assert.equal(await dashboardLists(c.context, 'active', c.client.name), true, 'still listed active');
      }
      const again = await sweepUnredeemedConnections(pool, monthOn);
      assert.ok(!again.some((c) => c.credential_id === a.credentialId));
    } finally {
      await a.context.close();
      await withRefresh.context.close();
    }
  });
});
