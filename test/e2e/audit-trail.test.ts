/**
 * The tamper-evident audit trail, end to end: changes made through the official MCP client, decided
 * by operators, and a token issued, all read back from the workspace's hash-chained log on the
 * dashboard's audit page and in its JSON Lines export; then one row's details edited in the
 * database, which `npm run admin -- verify-audit` (a child process) and the page name.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { dashboardFormPost } from '@adsmcp/testkit/dashboard';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import { REPO_ROOT, type SeedResult, type Stack } from '@adsmcp/testkit/stack';
import pg from 'pg';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let agent: McpTestClient;
let cookie: string;

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '200' } });
  ({ stack, seed } = e2e);
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  const signIn = await dashboardFormPost(stack.gatewayUrl, '/dashboard/login', '', {
    email: seed.dashboardUser,
    password: seed.dashboardPassword ?? '',
  });
  assert.equal(signIn.status, 303, 'signed in');
  cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
});

after(async () => {
  await agent?.close();
  await e2e?.stop();
});

const dashboard = (path: string) => fetch(`${stack.gatewayUrl}${path}`, { headers: { cookie } });

/** An agent prepares pausing the account's `n`th active ad; returns the change id. */
async function preparePause(ad: string): Promise<string> {
  const res = await agent.callTool('ads_update_ad', {
    account_id: seed.accounts[0]?.account_id,
    ad_id: ad,
    body: { status: 'paused' },
  });
  assert.notEqual(res.isError, true, JSON.stringify(res.structuredContent));
  return (res.structuredContent as { change_id: string }).change_id;
}

/** Reads the audit page until `done` holds (the gateway's own records are relayed within a second). */
async function auditPageUntil(done: (html: string) => boolean, path = '/dashboard/audit'): Promise<string> {
  let html = '';
  for (const until = Date.now() + 15_000; Date.now() < until; ) {
    const res = await dashboard(path);
    assert.equal(res.status, 200);
    html = await res.text();
    if (done(html)) return html;
    await new Promise((r) => setTimeout(r, 250));
  }
  assert.fail(`the audit page never showed what was expected:\n${html}`);
}

/** Runs `npm run admin -- verify-audit` as a child process: its exit code and output. */
function verifyAudit(workspace: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(
    'node',
    ['--import', 'tsx', 'services/gateway/src/admin.ts', 'verify-audit', '--workspace', workspace],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, ...stack.adminEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString('utf8');
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString('utf8');
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

describe('the audit trail', () => {
  let approved: string;
  let exported: { seq: string; kind: string; subject: string; prev_hash: string; hash: string }[];

  test('changes made through MCP, decided by operators, and a token issued are on the audit page, read from the chained log', async () => {
    const list = await agent.callTool('ads_list_ads', {
      account_id: seed.accounts[0]?.account_id,
      limit: 20,
    });
    const ads = (list.structuredContent as { ads: { id: string; status: string }[] }).ads.filter(
      (a) => a.status === 'active',
    );
    assert.ok(ads.length >= 2, 'two active ads to change');
    approved = await preparePause(ads[0]?.id ?? '');
    const rejected = await preparePause(ads[1]?.id ?? '');
    await stack.admin(['approve', approved, '--workspace', seed.workspaceId, '--yes']);
    await stack.admin(['reject', rejected, '--workspace', seed.workspaceId, '--reason', 'not this week']);
    await stack.admin(['create-token', '--workspace', seed.workspaceId, '--name', 'Audit trail token']);

    const html = await auditPageUntil((h) => h.includes('token created') && h.includes('change rejected'));
    assert.match(html, /Chain verifies: \d+ rows/);
    for (const what of ['change prepared', 'change approved', 'change rejected', 'token created'])
      assert.match(html, new RegExp(`class="what">${what}</td>`), `the page lists "${what}"`);
    assert.ok(html.includes('reason: not this week'));
    assert.ok(html.includes(`/dashboard/changes/${approved}`), 'the approval links to its change');
    assert.ok(html.includes('Export (JSON Lines)'), 'an admin is offered the export');

    // Keyset paging: the rows before the newest one are the rest, newest first.
    const seqs = [...html.matchAll(/<tr data-event="(\d+)"/g)].map((m) => Number(m[1]));
    assert.deepEqual(
      seqs,
      [...seqs].sort((a, b) => b - a),
      'newest first',
    );
    const older = await auditPageUntil(() => true, `/dashboard/audit?before=${seqs[0]}`);
    assert.deepEqual(
      [...older.matchAll(/<tr data-event="(\d+)"/g)].map((m) => Number(m[1])),
      seqs.slice(1),
    );
  });

  test('the JSON Lines export is the whole log, oldest first, each row naming the hash of the one before', async () => {
    const res = await dashboard('/dashboard/audit/export.jsonl');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/jsonl/);
    exported = (await res.text())
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      exported.map((r) => Number(r.seq)),
      exported.map((_, i) => i + 1),
    );
    exported.forEach((r, i) => {
      assert.equal(r.prev_hash, i === 0 ? '0'.repeat(64) : exported[i - 1]?.hash);
    });
    assert.ok(exported.some((r) => r.kind === 'change.approved' && r.subject === approved));
  });

  test('a token created while the changes service is down reaches the log once it is back', async () => {
    await stack.kill('changes', 'SIGKILL');
    try {
      await stack.admin([
        'create-token',
        '--workspace',
        seed.workspaceId,
        '--name',
        'Made while the log was down',
      ]);
    } finally {
      await stack.restart('changes');
    }
    const html = await auditPageUntil((h) => h.includes('Made while the log was down'));
    assert.equal(html.match(/Made while the log was down/g)?.length, 1, 'appended once');
    assert.match(html, /Chain verifies/);
  });

  test('a gateway row the log refuses is recorded as refused, and the rows after it still arrive', async () => {
    const c = new pg.Client({ connectionString: e2e.db.url });
    await c.connect();
    try {
      await c.query(
        `INSERT INTO gateway.audit_log (workspace_id, actor, action) VALUES ($1, 'operator', 'Not A Kind')`,
        [seed.workspaceId],
      );
    } finally {
      await c.end();
    }
    await stack.admin([
      'create-token',
      '--workspace',
      seed.workspaceId,
      '--name',
      'Made after a refused row',
    ]);
    const html = await auditPageUntil((h) => h.includes('Made after a refused row'));
    assert.match(html, /class="what">a gateway record the log refused<\/td>/);
    assert.match(html, /`kind` must be `&lt;area&gt;\.&lt;verb&gt;`/);
  });

  test('a row edited in the database makes verify-audit fail naming it, and the page says where the chain breaks', async () => {
    const before = await verifyAudit(seed.workspaceId);
    assert.equal(before.code, 0, before.stderr);
    // Rows appended since the export (a relayed sign-in) verify too.
    const rows = Number(/audit chain verifies: (\d+) rows/.exec(before.stdout)?.[1]);
    assert.ok(rows >= exported.length, before.stdout);

    const c = new pg.Client({ connectionString: e2e.db.url });
    await c.connect();
    let seq: string;
    try {
      const res = await c.query<{ seq: string }>(
        `UPDATE changes.audit_log SET details = jsonb_set(details, '{summary}', '"Pause nothing"')
          WHERE workspace_id = $1 AND kind = 'change.approved' AND subject = $2 RETURNING seq::text`,
        [seed.workspaceId, approved],
      );
      assert.equal(res.rowCount, 1);
      seq = res.rows[0]?.seq ?? '';
    } finally {
      await c.end();
    }

    const after = await verifyAudit(seed.workspaceId);
    assert.equal(after.code, 1, after.stdout);
    assert.match(after.stdout, new RegExp(`audit chain broken at row ${seq} \\(\\S+Z, change\\.approved\\)`));
    assert.match(after.stdout, /its hash does not match its contents/);
    assert.match(after.stderr, /does not verify/);

    const html = await auditPageUntil(() => true);
    assert.ok(html.includes(`data-broken-seq="${seq}"`), 'the page marks the broken row');
    assert.match(html, new RegExp(`Chain broken at row ${seq}`));
  });
});
