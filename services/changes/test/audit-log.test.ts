/**
 * The workspace's hash-chained audit log over real gRPC and PostgreSQL: rows chain, concurrent
 * appends do not fork the chain, a row edited in the database is named by verification, and the
 * changes service's own records append their event in the same transaction.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { AuditService } from '@adsmcp/proto/changes/v1/audit_pb';
import { buildConnectServer } from '@adsmcp/runtime/connect-server';
import { inTransaction, type Pool } from '@adsmcp/runtime/db';
import { as, type ServiceUnderTest, startServiceUnderTest } from '@adsmcp/testkit/service-harness';
import { type Client, Code } from '@connectrpc/connect';
import { auditHandlers } from '../src/handlers/audit-handlers.ts';
import { SERVICE_NAME } from '../src/server.ts';
import { backfillWorkspace } from '../src/store/audit-store.ts';
import { insertExpirySetting } from '../src/store/expiry-store.ts';
import { personIn, refusal } from './people.ts';

let svc: ServiceUnderTest<typeof AuditService>;
let pool: Pool;
let client: Client<typeof AuditService>;

before(async () => {
  svc = await startServiceUnderTest({
    service: AuditService,
    name: SERVICE_NAME,
    migrations: fileURLToPath(new URL('../migrations', import.meta.url)),
    build: (deps) =>
      buildConnectServer({
        serviceName: SERVICE_NAME,
        verifier: deps.verifier,
        logger: deps.logger,
        routes: (router) => router.service(AuditService, auditHandlers(deps.pool)),
      }),
  });
  pool = svc.pool;
  client = svc.client;
});

after(async () => {
  await svc?.stop();
});

/** An operator of a new workspace (as the gateway appends), and a reader of it. */
function workspace() {
  const person = personIn(randomUUID());
  return {
    operator: person({ via: 'operator', role: 'admin' }),
    reader: person({ role: 'viewer', scopes: ['read'] }),
  };
}

const append = (who: ReturnType<typeof workspace>, n: number) =>
  client.appendAuditEvent(
    {
      actor: 'credential:c1',
      kind: 'credential.created',
      subject: `c${n}`,
      detailsJson: JSON.stringify({ n }),
    },
    as(who.operator),
  );

describe('the audit log', () => {
  test('chains each row to the one before and lists them newest first, paged by seq', async () => {
    const w = workspace();
    for (let n = 1; n <= 3; n++) await append(w, n);
    const first = await client.listAuditEvents({ limit: 2 }, as(w.reader));
    assert.deepEqual(
      first.events.map((e) => [e.seq, e.subject]),
      [
        [3n, 'c3'],
        [2n, 'c2'],
      ],
    );
    assert.equal(first.nextSeq, 2n);
    const rest = await client.listAuditEvents({ limit: 2, beforeSeq: first.nextSeq }, as(w.reader));
    assert.deepEqual(
      rest.events.map((e) => [e.seq, e.subject]),
      [[1n, 'c1']],
    );
    assert.equal(rest.nextSeq, 0n);
    const [e3, e2] = first.events;
    const [e1] = rest.events;
    assert.equal(e1?.prevHash, '0'.repeat(64));
    assert.equal(e2?.prevHash, e1?.hash);
    assert.equal(e3?.prevHash, e2?.hash);
    const verified = await client.verifyAuditChain({}, as(w.reader));
    assert.deepEqual([verified.ok, verified.rows], [true, 3n]);
    // The text filter reads the subject and the details, and the subjects a name stands for.
    const found = await client.listAuditEvents(
      { limit: 10, text: '"N": 1', textSubjects: ['c3'] },
      as(w.reader),
    );
    assert.deepEqual(
      found.events.map((e) => e.subject),
      ['c3', 'c1'],
    );
  });

  test('concurrent appends to one workspace never fork the chain', async () => {
    const w = workspace();
    await Promise.all(Array.from({ length: 40 }, (_, i) => append(w, i)));
    const { events } = await client.listAuditEvents({ limit: 100, afterSeq: 0n }, as(w.reader));
    assert.deepEqual(
      events.map((e) => e.seq),
      Array.from({ length: 40 }, (_, i) => BigInt(i + 1)),
    );
    assert.equal(new Set(events.map((e) => e.prevHash)).size, 40, 'no two rows follow the same row');
    const verified = await client.verifyAuditChain({}, as(w.reader));
    assert.deepEqual([verified.ok, verified.rows], [true, 40n]);
  });

  test("a row's details edited in the database make verification name that row", async () => {
    const w = workspace();
    for (let n = 1; n <= 5; n++) await append(w, n);
    await pool.query(`UPDATE audit_log SET details = '{"n": 99}' WHERE workspace_id = $1 AND seq = 3`, [
      w.operator.workspaceId,
    ]);
    const verified = await client.verifyAuditChain({}, as(w.reader));
    assert.equal(verified.ok, false);
    assert.equal(verified.brokenSeq, 3n);
    assert.equal(verified.brokenKind, 'credential.created');
    assert.match(verified.reason, /hash does not match/);
    assert.equal(verified.rows, 2n);
  });

  test('a check verifies the rows since the last one; a whole check finds an older edit, which every check then reports until the row is put back', async () => {
    const w = workspace();
    for (let n = 1; n <= 4; n++) await append(w, n);
    const first = await client.verifyAuditChain({}, as(w.reader));
    assert.deepEqual([first.ok, first.rows, first.wholeRows], [true, 4n, 4n], 'the first check is whole');
    assert.notEqual(first.wholeCheckedAt, '');
    const { rows } = await pool.query<{ details: unknown }>(
      'SELECT details FROM audit_log WHERE workspace_id = $1 AND seq = 2',
      [w.operator.workspaceId],
    );
    await pool.query(`UPDATE audit_log SET details = '{"n": 99}' WHERE workspace_id = $1 AND seq = 2`, [
      w.operator.workspaceId,
    ]);
    for (let n = 5; n <= 6; n++) await append(w, n);
    // The page's check reads rows 5 and 6 only; it says so by dating the whole check (rows 1-4).
    const since = await client.verifyAuditChain({}, as(w.reader));
    assert.deepEqual([since.ok, since.rows, since.wholeRows], [true, 6n, 4n]);
    const whole = await client.verifyAuditChain({ whole: true }, as(w.reader));
    assert.deepEqual([whole.ok, whole.brokenSeq], [false, 2n]);
    const after = await client.verifyAuditChain({}, as(w.reader));
    assert.deepEqual([after.ok, after.brokenSeq, after.reason], [false, 2n, whole.reason]);
    await pool.query('UPDATE audit_log SET details = $2 WHERE workspace_id = $1 AND seq = 2', [
      w.operator.workspaceId,
      JSON.stringify(rows[0]?.details),
    ]);
    const restored = await client.verifyAuditChain({ whole: true }, as(w.reader));
    assert.deepEqual([restored.ok, restored.rows, restored.wholeRows], [true, 6n, 6n]);
    assert.equal((await client.verifyAuditChain({}, as(w.reader))).ok, true);
  });

  test('a deleted last row is named too', async () => {
    const w = workspace();
    for (let n = 1; n <= 2; n++) await append(w, n);
    await pool.query('DELETE FROM audit_log WHERE workspace_id = $1 AND seq = 2', [w.operator.workspaceId]);
    const verified = await client.verifyAuditChain({}, as(w.reader));
    assert.deepEqual([verified.ok, verified.brokenSeq, verified.reason], [false, 2n, 'the row is missing']);
  });

  test('an event appended again with its source key is the row already there', async () => {
    const w = workspace();
    const once = { actor: 'operator', kind: 'workspace.created', sourceKey: 'g:1', detailsJson: '{}' };
    const a = await client.appendAuditEvent(once, as(w.operator));
    const b = await client.appendAuditEvent(once, as(w.operator));
    assert.equal(b.event?.seq, a.event?.seq);
    assert.equal((await client.verifyAuditChain({}, as(w.reader))).rows, 1n);
  });

  test('a batch is appended in order, all or none: one bad event appends nothing and is named', async () => {
    const w = workspace();
    const event = (n: number) => ({ actor: 'operator', kind: 'user.signed_in', sourceKey: `g:${n}` });
    const bad = await refusal(
      client.appendAuditEvents({ events: [event(1), { ...event(2), detailsJson: '"x"' }] }, as(w.operator)),
    );
    assert.equal(bad.code, Code.InvalidArgument);
    assert.match(bad.message, /`events\[1\]\.details_json` must be a JSON object/);
    assert.equal((await client.verifyAuditChain({}, as(w.reader))).rows, 0n);
    const { events } = await client.appendAuditEvents(
      { events: [event(1), event(2), event(1)] },
      as(w.operator),
    );
    assert.deepEqual(
      events.map((e) => [e.seq, e.sourceKey]),
      [
        [1n, 'g:1'],
        [2n, 'g:2'],
        [1n, 'g:1'],
      ],
    );
  });

  test("the service's own record appends its event in the same call", async () => {
    const w = workspace();
    await insertExpirySetting(pool, {
      workspaceId: w.operator.workspaceId,
      by: 'user:x via dashboard (d)',
      hours: { preparedValidHours: 10, approvalValidHours: 5 },
    });
    const { events } = await client.listAuditEvents({ limit: 10 }, as(w.reader));
    assert.deepEqual(
      events.map((e) => [e.kind, e.actor, JSON.parse(e.detailsJson)]),
      [['expiry.set', 'user:x via dashboard (d)', { prepared_valid_hours: 10, approval_valid_hours: 5 }]],
    );
  });

  test('a record whose event cannot be appended is not recorded either', async () => {
    const w = workspace();
    const ws = w.operator.workspaceId;
    // The database refuses this workspace's events (as it would a full disk): the append fails.
    await pool.query(
      `CREATE FUNCTION refuse_event() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN IF NEW.workspace_id = '${ws}' THEN RAISE EXCEPTION 'no room for the event'; END IF; RETURN NEW; END $$;
       CREATE TRIGGER refuse_event BEFORE INSERT ON audit_staged FOR EACH ROW EXECUTE FUNCTION refuse_event()`,
    );
    try {
      await assert.rejects(
        insertExpirySetting(pool, {
          workspaceId: ws,
          by: 'user:x via dashboard (d)',
          hours: { preparedValidHours: 10, approvalValidHours: 5 },
        }),
        /no room for the event/,
      );
    } finally {
      await pool.query('DROP TRIGGER refuse_event ON audit_staged; DROP FUNCTION refuse_event()');
    }
    const { rows } = await pool.query('SELECT 1 FROM change_expiry_settings WHERE workspace_id = $1', [ws]);
    assert.equal(rows.length, 0, 'the setting was rolled back with its event');
  });

  test('the records from before the log are appended once, in the order they happened, up to its first own row', async () => {
    const w = workspace();
    const ws = w.operator.workspaceId;
    const change = randomUUID();
    // A change prepared and approved, and an expiry setting, before the log began.
    await pool.query(
      `INSERT INTO changes (change_id, workspace_id, account_id, tool, status, summary, method, path, body_json, digest,
         target_path, target_before_json, prepared_by, prepared_at, approved_by, approved_at)
       VALUES ($1, $2, gen_random_uuid(), 'ads_update_ad', 'approved', 'Rename ad 7', 'POST', '/ads/7', '{}', repeat('d', 64),
         '/ads/7', '{}', 'user:p via mcp (c)', now() - interval '3 days', 'user:r via dashboard (d)', now() - interval '2 days')`,
      [change, ws],
    );
    await pool.query(
      `INSERT INTO change_expiry_settings (workspace_id, set_at, set_by, prepared_valid_hours, approval_valid_hours)
       VALUES ($1, now() - interval '1 day', 'user:a via dashboard (d)', 48, 6)`,
      [ws],
    );
    const once = await inTransaction(pool, (tx) => backfillWorkspace(tx, ws));
    const again = await inTransaction(pool, (tx) => backfillWorkspace(tx, ws));
    assert.deepEqual([once, again], [3, 0]);
    const { events } = await client.listAuditEvents({ limit: 10, afterSeq: 0n }, as(w.reader));
    assert.deepEqual(
      events.map((e) => [e.kind, e.actor]),
      [
        ['change.prepared', 'user:p via mcp (c)'],
        ['change.approved', 'user:r via dashboard (d)'],
        ['expiry.set', 'user:a via dashboard (d)'],
        ['audit.backfilled', 'worker:audit'],
      ],
    );
    assert.equal((await client.verifyAuditChain({}, as(w.reader))).ok, true);
    const empty = workspace().operator.workspaceId;
    assert.equal(await inTransaction(pool, (tx) => backfillWorkspace(tx, empty)), 0);
    const { rows } = await pool.query('SELECT 1 FROM audit_log WHERE workspace_id = $1', [empty]);
    assert.equal(rows.length, 0, 'nothing to add, nothing appended');
  });

  test('bad input is refused naming the field and the rule; only an operator appends', async () => {
    const w = workspace();
    const bad = async (over: object, field: string) => {
      const r = await refusal(client.appendAuditEvent({ actor: 'a', kind: 'x.y', ...over }, as(w.operator)));
      assert.equal(r.code, Code.InvalidArgument);
      assert.match(r.message, new RegExp(`\`${field}\``));
    };
    await bad({ detailsJson: '[1]' }, 'details_json');
    await bad({ detailsJson: '{"a": "\\u0000"}' }, 'details_json');
    await bad({ kind: 'Created' }, 'kind');
    await bad({ actor: '' }, 'actor');
    await bad({ subject: 'x'.repeat(201) }, 'subject');
    await bad({ at: 'yesterday' }, 'at');
    const limit = await refusal(client.listAuditEvents({ limit: 501 }, as(w.reader)));
    assert.match(limit.message, /`limit` must be an integer from 1 to 500/);
    for (const via of ['mcp', 'dashboard'] as const) {
      const refused = await refusal(
        client.appendAuditEvent({ actor: 'a', kind: 'x.y' }, as({ ...w.operator, via })),
      );
      assert.equal(refused.code, Code.PermissionDenied, via);
    }
  });
});
