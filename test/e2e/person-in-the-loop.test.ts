/**
 * The person in the loop, reached from where the agent works: an agent's apply of a change that
 * awaits a person brings the change's review page to the client — a URL elicitation on 2026-07-28,
 * the URL elicitation required error (-32042) on 2025-11-25 — for a client that declared URL
 * elicitation; the person opens it in Chromium, signs in and approves, and the client's retry
 * applies the change exactly once (the sandbox's ledger is the witness). A client without the
 * capability gets the tool error naming the review page; a client that asked for a task follows it
 * to the change's outcome after the person approved.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { launchBrowser } from '@adsmcp/testkit/browser';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import { sandboxLedger, toolCalls } from '@adsmcp/testkit/tool-calls';
import {
  Client,
  type ElicitRequestURLParams,
  ProtocolError,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import pg from 'pg';
import type { Browser } from 'playwright-core';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let browser: Browser;
let agent: McpTestClient;
let account: SeedResult['accounts'][number];
let ads: { id: string; status: string }[];
/** A second credential of the same workspace, for the clients that declare nothing. */
let otherToken: string;

const { ok, refused } = toolCalls(() => agent);

interface ChangeView {
  change_id: string;
  status: string;
  digest: string;
  review_url: string;
}

const CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
const TASKS = 'io.modelcontextprotocol/tasks';

/** A change of its own for each test: an ad renamed, prepared by the agent. */
async function prepareRename(name: string): Promise<{ change: ChangeView; path: string }> {
  const ad = ads.shift();
  assert.ok(ad, 'an ad is left to rename');
  const change = await ok<ChangeView>('ads_update_ad', {
    account_id: account.account_id,
    ad_id: ad.id,
    body: { name },
  });
  assert.equal(change.status, 'prepared');
  return { change, path: `/ads/${ad.id}` };
}

const ledger = (path: string) => sandboxLedger(stack, account.upstream_account_id, path);

/**
 * What the person does with the URL the client shows them: opens it in a browser of their own,
 * signs in to the dashboard, opens it again and approves. Returns the status the page then shows.
 */
async function approveAt(url: string): Promise<string> {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(url);
    assert.match(page.url(), /\/dashboard\/login/, 'the review URL grants nothing without signing in');
    await page.fill('#email', seed.dashboardUser);
    await page.fill('#password', seed.dashboardPassword as string);
    await Promise.all([page.waitForURL(/\/dashboard/), page.click('button[type=submit]')]);
    await page.goto(url);
    await Promise.all([page.waitForURL(url), page.click('#approve')]);
    return (await page.locator('#status').innerText()).trim();
  } finally {
    await context.close();
  }
}

/** A v2 client with URL elicitation declared, on `era`; the person approves every page it is shown. */
async function elicitingClient(era: '2025' | '2026', token: string) {
  const shown: ElicitRequestURLParams[] = [];
  const client = new Client(
    { name: `e2e-url-elicitation-${era}`, version: '1.0.0' },
    {
      capabilities: { elicitation: { url: {} } },
      ...(era === '2026' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {}),
    },
  );
  client.setRequestHandler('elicitation/create', async (request) => {
    const params = request.params as ElicitRequestURLParams;
    shown.push(params);
    assert.equal(await approveAt(params.url), 'approved');
    return { action: 'accept' };
  });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(stack.mcpUrl), { authProvider: { token: async () => token } }),
  );
  return { client, shown };
}

type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };

/** The change a successful apply result shows, after it left applying. */
async function appliedChange(result: Result, changeId: string): Promise<ChangeView> {
  assert.notEqual(result.isError, true, JSON.stringify(result.structuredContent));
  const view = result.structuredContent as unknown as ChangeView;
  if (view.status !== 'applying') return view;
  for (let i = 0; i < 100; i++) {
    const c = await ok<ChangeView>('ads_get_change', { change_id: changeId });
    if (c.status !== 'applying') return c;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.fail('the change stayed applying');
}

/**
 * A raw 2026-07-28 request: the SDK's client has no tasks runtime (its types leave the tasks
 * methods out), so the extension is spoken on the wire as the conformance package speaks it.
 */
async function modern(
  token: string,
  method: string,
  params: Record<string, unknown>,
  opts: { name?: string; extensions?: Record<string, unknown> } = {},
): Promise<{
  status: number;
  body: { result?: Record<string, unknown>; error?: { code: number; message: string } };
}> {
  const res = await fetch(stack.mcpUrl, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(opts.name === undefined ? {} : { 'mcp-name': opts.name }),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          [CLIENT_CAPABILITIES]: { extensions: opts.extensions ?? { [TASKS]: {} } },
          'io.modelcontextprotocol/clientInfo': { name: 'e2e-tasks', version: '1.0.0' },
        },
      },
    }),
  });
  const text = await res.text();
  // A result may come as JSON or as one server-sent event.
  const json = text.startsWith('{') ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? 'null');
  return { status: res.status, body: JSON.parse(json) };
}

/** An ads_apply_change called as a task on 2026-07-28; the answer as it came. */
function applyAsTask(args: Record<string, unknown>) {
  return modern(
    seed.token,
    'tools/call',
    { name: 'ads_apply_change', arguments: args },
    { name: 'ads_apply_change' },
  );
}

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '500' } });
  ({ stack, seed } = e2e);
  account = seed.accounts.find((a) => a.currency === 'USD') as SeedResult['accounts'][number];
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  browser = await launchBrowser();
  ({ token: otherToken } = JSON.parse(
    await stack.admin(['create-token', '--workspace', seed.workspaceId]),
  ) as {
    token: string;
  });
  const list = await ok<{ ads: typeof ads }>('ads_list_ads', { account_id: account.account_id, limit: 20 });
  ads = list.ads.filter((a) => a.status !== 'archived');
  assert.ok(ads.length >= 5, 'the seeded account has ads to rename');
});

after(async () => {
  await agent?.close();
  await browser?.close();
  await e2e?.stop();
});

describe('a client that declared URL elicitation', () => {
  test('2026-07-28: apply brings the review page as a URL elicitation; after the person approves it, the retry applies the change once', async () => {
    const { change, path } = await prepareRename('Person in the loop — 2026');
    const { client, shown } = await elicitingClient('2026', seed.token);
    try {
      const result = (await client.callTool({
        name: 'ads_apply_change',
        arguments: { change_id: change.change_id, digest: change.digest },
      })) as Result;
      assert.equal(shown.length, 1, 'the page was shown once');
      assert.equal(shown[0]?.url, change.review_url);
      assert.equal(shown[0]?.mode, 'url');
      assert.match(shown[0]?.message ?? '', /awaits a person's decision/);
      assert.equal((await appliedChange(result, change.change_id)).status, 'applied');
      const rows = await ledger(path);
      assert.equal(rows.length, 1, 'applied exactly once');
      assert.deepEqual(rows[0]?.request_body, { name: 'Person in the loop — 2026' });
    } finally {
      await client.close();
    }
  });

  test('2025-11-25: apply is refused with the URL elicitation required error (-32042) naming the review page; after the person approves it, the retry applies the change once', async () => {
    const { change, path } = await prepareRename('Person in the loop — 2025');
    const { client, shown } = await elicitingClient('2025', seed.token);
    try {
      const args = {
        name: 'ads_apply_change',
        arguments: { change_id: change.change_id, digest: change.digest },
      };
      const err = await client.callTool(args).then(
        (r) => assert.fail(`expected -32042, got ${JSON.stringify(r)}`),
        (e: unknown) => e,
      );
      assert.ok(err instanceof ProtocolError, String(err));
      assert.equal(err.code, -32042);
      const elicitations = (err.data as { elicitations: ElicitRequestURLParams[] }).elicitations;
      assert.equal(elicitations.length, 1);
      assert.equal(elicitations[0]?.mode, 'url');
      assert.equal(elicitations[0]?.url, change.review_url);
      assert.deepEqual(await ledger(path), [], 'nothing was applied before the person decided');
      assert.equal(shown.length, 0, 'the client asks the person itself, not through its request handler');

      assert.equal(await approveAt(change.review_url), 'approved');
      const result = (await client.callTool(args)) as Result;
      assert.equal((await appliedChange(result, change.change_id)).status, 'applied');
      assert.equal((await ledger(path)).length, 1, 'applied exactly once');
    } finally {
      await client.close();
    }
  });
});

describe('a client that declared nothing', () => {
  test('on both eras, apply is the tool error naming the change’s status and its review page, and nothing is applied', async () => {
    const { change, path } = await prepareRename('Person in the loop — no capability');
    for (const kind of ['v2-2026', 'v2-2025', 'v1'] as const) {
      const client = await connectClient(kind, stack.mcpUrl, otherToken);
      try {
        const error = (await refused('ads_apply_change', { change_id: change.change_id }, client)) as {
          code: string;
          message: string;
          status?: string;
          review_url?: string;
        };
        assert.equal(error.code, 'failed_precondition', kind);
        assert.match(error.message, /not approved yet/, kind);
        assert.equal(error.status, 'prepared', kind);
        assert.equal(error.review_url, change.review_url, kind);
      } finally {
        await client.close();
      }
    }
    assert.deepEqual(await ledger(path), []);
  });
});

describe('a task-based apply', () => {
  test('the task waits for the person, says so with the review page, survives a gateway restart, and completes with the applied change after they approve', async () => {
    const { change, path } = await prepareRename('Person in the loop — task');
    const created = await applyAsTask({ change_id: change.change_id, digest: change.digest });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.ok(created.body.result, JSON.stringify(created.body));
    const task = created.body.result as { resultType: string; taskId: string; status: string; ttlMs: number };
    assert.equal(task.resultType, 'task');
    assert.equal(task.status, 'working');
    assert.ok(task.ttlMs > 0);

    const get = (token = seed.token) =>
      modern(token, 'tasks/get', { taskId: task.taskId }, { name: task.taskId });
    const waiting = (await get()).body.result as { status: string; statusMessage: string };
    assert.equal(waiting.status, 'working');
    assert.match(waiting.statusMessage, /Waiting for a person/);
    assert.ok(waiting.statusMessage.includes(change.review_url), waiting.statusMessage);
    assert.deepEqual(await ledger(path), [], 'nothing was applied while the person had not decided');

    const stranger = await get(otherToken);
    assert.equal(stranger.body.error?.code, -32602, 'another credential is told the task does not exist');
    assert.match(stranger.body.error?.message ?? '', /task not found/);
    const undeclared = await modern(
      seed.token,
      'tasks/get',
      { taskId: task.taskId },
      { name: task.taskId, extensions: {} },
    );
    assert.equal(undeclared.status, 400);
    assert.equal(undeclared.body.error?.code, -32021);

    // The task is the gateway's database's, not a process's: a restarted gateway answers for it.
    await stack.kill('gateway', 'SIGTERM');
    await stack.restart('gateway');
    const afterRestart = (await get()).body.result as { status: string; statusMessage: string };
    assert.equal(afterRestart.status, 'working');
    assert.match(afterRestart.statusMessage, /Waiting for a person/);

    assert.equal(await approveAt(change.review_url), 'approved');
    let done: { status: string; result?: Result } = waiting;
    for (let i = 0; i < 100 && done.status === 'working'; i++) {
      await new Promise((r) => setTimeout(r, 200));
      done = (await get()).body.result as typeof done;
    }
    assert.equal(done.status, 'completed', JSON.stringify(done));
    const applied = done.result?.structuredContent as unknown as ChangeView | undefined;
    assert.equal(applied?.status, 'applied', JSON.stringify(done));
    assert.equal((await ledger(path)).length, 1, 'applied exactly once');
    const again = (await get()).body.result as { status: string };
    assert.equal(again.status, 'completed', 'a completed task keeps its result');
    assert.equal((await ledger(path)).length, 1, 'asking again applies nothing more');
  });
});

describe('tasks of the other long tools, and cancelling', () => {
  /** Asks tasks/get until the task ended. */
  async function ended(taskId: string): Promise<{ status: string; result?: Result; statusMessage?: string }> {
    for (let i = 0; i < 150; i++) {
      const task = (await modern(seed.token, 'tasks/get', { taskId }, { name: taskId })).body.result as {
        status: string;
      };
      if (task.status !== 'working') return task;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.fail(`task ${taskId} did not end`);
  }

  test('a report created as a task ends with the tool’s result, the saved report, and is gone once its ttlMs passed', async () => {
    const day = (daysAgo: number) => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10);
    const args = { account_id: account.account_id, name: 'Weekly, as a task', since: day(9), until: day(3) };
    const created = await modern(
      seed.token,
      'tools/call',
      { name: 'ads_create_performance_report', arguments: args },
      { name: 'ads_create_performance_report' },
    );
    const { taskId, resultType } = created.body.result as { taskId: string; resultType: string };
    assert.equal(resultType, 'task', JSON.stringify(created.body));
    const done = await ended(taskId);
    assert.equal(done.status, 'completed', JSON.stringify(done));
    assert.notEqual(done.result?.isError, true, JSON.stringify(done.result));
    const content = done.result?.structuredContent as
      | { report?: { report_id: string; name: string } }
      | undefined;
    const report = content?.report;
    assert.equal(report?.name, 'Weekly, as a task', JSON.stringify(done.result));
    const saved = await ok<{ report: { name: string } }>('ads_get_performance_report', {
      report_id: report?.report_id,
    });
    assert.equal(saved.report.name, 'Weekly, as a task', 'the report the task made is saved');

    // Its ttlMs passed (the database's clock moved on, as far as this task is concerned): it is gone.
    const db = new pg.Client({ connectionString: e2e.db.url });
    await db.connect();
    try {
      await db.query(
        "UPDATE gateway.mcp_tasks SET expires_at = now() - interval '1 second' WHERE task_id = $1",
        [taskId],
      );
    } finally {
      await db.end();
    }
    const gone = await modern(seed.token, 'tasks/get', { taskId }, { name: taskId });
    assert.equal(gone.body.error?.code, -32602);
    assert.match(gone.body.error?.message ?? '', /task not found/);
  });

  test('an apply task for a change that is not in the workspace ends with the tool’s not_found at the first tasks/get', async () => {
    const created = await applyAsTask({
      change_id: '00000000-0000-4000-8000-000000000000',
      digest: 'a'.repeat(64),
    });
    const { taskId } = created.body.result as { taskId: string };
    const task = (await modern(seed.token, 'tasks/get', { taskId }, { name: taskId })).body.result as {
      status: string;
      result?: Result;
    };
    assert.equal(task.status, 'completed', JSON.stringify(task));
    assert.equal(task.result?.isError, true);
    const error = task.result?.structuredContent?.error as { code: string; message: string } | undefined;
    assert.equal(error?.code, 'not_found', JSON.stringify(task));
    assert.match(error?.message ?? '', /00000000-0000-4000-8000-000000000000/);
  });

  test('an apply task whose request went unanswered asks again while the change is still only approved, and ends applied once', async () => {
    const { change, path } = await prepareRename('Person in the loop — request unanswered');
    const created = await applyAsTask({ change_id: change.change_id, digest: change.digest });
    const { taskId } = created.body.result as { taskId: string };
    assert.equal(await approveAt(change.review_url), 'approved');
    // As if a tasks/get had requested the apply a minute ago and the changes service had not
    // answered it.
    const db = new pg.Client({ connectionString: e2e.db.url });
    await db.connect();
    try {
      await db.query(
        "UPDATE gateway.mcp_tasks SET apply_requested = true, last_updated_at = now() - interval '61 seconds' WHERE task_id = $1",
        [taskId],
      );
    } finally {
      await db.end();
    }
    const task = await ended(taskId);
    assert.equal(task.status, 'completed', JSON.stringify(task));
    const applied = task.result?.structuredContent as unknown as ChangeView | undefined;
    assert.equal(applied?.status, 'applied', JSON.stringify(task));
    assert.equal((await ledger(path)).length, 1, 'applied exactly once');
  });

  test('a tasks request is held to the JSON-RPC envelope: a notification does nothing, a bad id or version is refused', async () => {
    const { change } = await prepareRename('Person in the loop — envelope');
    const created = await applyAsTask({ change_id: change.change_id });
    const { taskId } = created.body.result as { taskId: string };
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      [CLIENT_CAPABILITIES]: { extensions: { [TASKS]: {} } },
    };
    const send = (envelope: Record<string, unknown>, version: string | null = '2026-07-28') =>
      fetch(stack.mcpUrl, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${seed.token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(version === null ? {} : { 'mcp-protocol-version': version }),
          'mcp-method': 'tasks/cancel',
          'mcp-name': taskId,
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          method: 'tasks/cancel',
          params: { taskId, _meta: meta },
          ...envelope,
        }),
      });
    const notification = await send({});
    assert.equal(notification.status, 202);
    assert.equal(await notification.text(), '');
    for (const [envelope, version, code, message] of [
      [{ id: { x: 1 } }, '2026-07-28', -32600, /`id` must be a string or an integer/],
      [{ id: 1.5 }, '2026-07-28', -32600, /`id` must be a string or an integer/],
      [{ id: 1, jsonrpc: '1.0' }, '2026-07-28', -32600, /`jsonrpc` must be "2.0"/],
      [{ id: 1, extra: true }, '2026-07-28', -32600, /unknown member `extra`/],
      [{ id: 1 }, null, -32020, /MCP-Protocol-Version header is absent/],
    ] as const) {
      const res = await send(envelope, version);
      assert.equal(res.status, 400, JSON.stringify(envelope));
      const body = (await res.json()) as { error: { code: number; message: string } };
      assert.equal(body.error.code, code, JSON.stringify(body));
      assert.match(body.error.message, message);
    }
    const task = (await modern(seed.token, 'tasks/get', { taskId }, { name: taskId })).body.result as {
      status: string;
    };
    assert.equal(task.status, 'working', 'none of them cancelled the task');
  });

  test('a cancelled apply task ends cancelled and requests nothing: after the person approves, nothing is applied', async () => {
    const { change, path } = await prepareRename('Person in the loop — cancelled task');
    const created = await applyAsTask({ change_id: change.change_id });
    const { taskId } = created.body.result as { taskId: string };
    const ack = await modern(seed.token, 'tasks/cancel', { taskId }, { name: taskId });
    assert.deepEqual(ack.body.result, { resultType: 'complete' });
    assert.equal(await approveAt(change.review_url), 'approved');
    const task = await ended(taskId);
    assert.equal(task.status, 'cancelled');
    assert.equal(task.result, undefined);
    assert.equal(
      (await ok<ChangeView>('ads_get_change', { change_id: change.change_id })).status,
      'approved',
    );
    assert.deepEqual(await ledger(path), [], 'nothing was applied');
  });
});
