/**
 * Competitor watch end to end: every process running, driven through the official MCP client.
 * The product's fetcher refuses every internal address and this machine reaches no other, so a
 * check here can only show refusal evidence; the success path (baseline, changes, phrases) is
 * tested in the marketing service against a local HTTPS site.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import type { Stack } from '@adsmcp/testkit/stack';
import { type ToolCalls, toolCalls } from '@adsmcp/testkit/tool-calls';

let e2e: SeededStack;
let stack: Stack;
let admin: McpTestClient;
let editor: McpTestClient;
let otherEditor: McpTestClient;
let calls: ToolCalls;
let accountId: string;
/** Saved enabled as soon as the stack is up: the schedule checks it within a minute and a half. */
let scheduled: Source;

interface Source {
  source_id: string;
  account_id: string;
  url: string;
  literals: string[];
  enabled: boolean;
  schedule_state: string;
  next_check_at: string | null;
  paused_at: string | null;
  created_by: string;
  revision: number;
  baseline_at: string | null;
  last_check: { observation_id: string; outcome: string; http_status: number | null; summary: string } | null;
}

interface Observation {
  observation_id: string;
  source_id: string;
  trigger: string;
  outcome: string;
  summary: string;
  url: string;
  http_status: number | null;
  reason: string | null;
  reason_message: string | null;
  title: string | null;
}

async function memberClient(email: string, role: 'editor' | 'viewer'): Promise<McpTestClient> {
  const workspace = e2e.seed.workspaceId;
  await stack.admin([
    'add-user',
    '--workspace',
    workspace,
    '--email',
    email,
    '--password',
    'member-password-1',
    '--role',
    role,
  ]);
  const { token } = JSON.parse(
    await stack.admin(['create-token', '--workspace', workspace, '--user', email]),
  ) as {
    token: string;
  };
  return connectClient('v2-2026', stack.mcpUrl, token);
}

const saveArgs = (patch: Record<string, unknown> = {}) => ({
  account_id: accountId,
  name: 'Rival offers',
  url: 'https://127.0.0.10/offers',
  interval_hours: 24,
  // Sources checked by hand are saved paused, so that no scheduled check takes their host's slot.
  enabled: false,
  ...patch,
});

async function save(args: Record<string, unknown>, client = admin): Promise<Source> {
  return (await calls.ok<{ source: Source }>('ads_save_competitor_source', args, client)).source;
}

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '1000' } });
  stack = e2e.stack;
  accountId = e2e.seed.accounts[0]?.account_id ?? '';
  admin = await connectClient('v2-2026', stack.mcpUrl, e2e.seed.token);
  editor = await memberClient('editor@demo.example', 'editor');
  otherEditor = await memberClient('other-editor@demo.example', 'editor');
  calls = toolCalls(() => admin);
  scheduled = await save(saveArgs({ url: 'https://127.0.0.20/scheduled', enabled: true }));
});

after(async () => {
  await Promise.all([admin?.close(), editor?.close(), otherEditor?.close()]);
  await e2e?.stop();
});

describe('saving and listing', () => {
  test('a saved source is listed with its schedule, and no check yet', async () => {
    const source = await save(saveArgs({ enabled: true, literals: ['free shipping'] }));
    assert.equal(source.revision, 1);
    assert.equal(source.schedule_state, 'scheduled');
    assert.ok(source.next_check_at);
    assert.deepEqual(source.literals, ['free shipping']);
    const list = await calls.ok<{ sources: Source[]; total: number; next_offset: number | null }>(
      'ads_list_competitor_sources',
      { account_id: accountId },
    );
    const listed = list.sources.find((s) => s.source_id === source.source_id);
    assert.equal(listed?.schedule_state, 'scheduled');
    assert.equal(listed?.last_check, null);
  });

  test('a stale revision is refused with the current revision', async () => {
    const source = await save(saveArgs({ url: 'https://127.0.0.11/stale' }));
    await save({
      ...saveArgs({ url: source.url, name: 'Renamed' }),
      source_id: source.source_id,
      expected_revision: 1,
    });
    const err = await calls.refused('ads_save_competitor_source', {
      ...saveArgs({ url: source.url }),
      source_id: source.source_id,
      expected_revision: 1,
    });
    assert.equal(err.code, 'stale_revision');
    assert.match(err.message, /the source is at revision 2/);
    assert.equal((err as { current_revision?: number }).current_revision, 2);
  });

  test('bad arguments are refused naming the field and the rule', async () => {
    const http = await calls.refused(
      'ads_save_competitor_source',
      saveArgs({ url: 'http://rival.example/' }),
    );
    assert.equal(http.code, 'invalid_argument');
    assert.match(http.message, /url/);
    const interval = await calls.refused('ads_save_competitor_source', saveArgs({ interval_hours: 745 }));
    assert.match(interval.message, /interval_hours/);
    const literals = await calls.refused(
      'ads_save_competitor_source',
      saveArgs({ literals: Array.from({ length: 31 }, (_, i) => `phrase ${i}`) }),
    );
    assert.match(literals.message, /literals/);
    const account = await calls.refused('ads_save_competitor_source', saveArgs({ account_id: randomUUID() }));
    assert.equal(account.code, 'not_found', account.message);
  });
});

describe('checks by hand', () => {
  test('a source on a loopback address is checked and the refusal is recorded as its evidence', async () => {
    const source = await save(saveArgs({ url: 'https://127.0.0.1/offers' }));
    const { observation } = await calls.ok<{ observation: Observation; source: Source }>(
      'ads_check_competitor_source',
      { source_id: source.source_id },
    );
    assert.equal(observation.outcome, 'refused');
    assert.equal(observation.trigger, 'manual');
    assert.equal(observation.reason, 'address_refused');
    assert.equal(observation.reason_message, 'the host resolves to a loopback address (127.0.0.1)');
    assert.equal(observation.http_status, null);
    assert.equal(observation.title, null);

    const { observations, total } = await calls.ok<{ observations: Observation[]; total: number }>(
      'ads_get_competitor_observations',
      { source_id: source.source_id },
    );
    assert.equal(total, 1);
    assert.equal(observations[0]?.observation_id, observation.observation_id);
    const list = await calls.ok<{ sources: Source[] }>('ads_list_competitor_sources', { limit: 100 });
    const listed = list.sources.find((s) => s.source_id === source.source_id);
    assert.equal(listed?.last_check?.outcome, 'refused');
    assert.equal(listed?.last_check?.summary, 'refused: the host resolves to a loopback address (127.0.0.1)');
  });

  test('other loopback spellings are refused too', async () => {
    for (const [url, message] of [
      ['https://[::1]/', 'the host resolves to a loopback address (::1)'],
      ['https://0x7f.5/', 'the host resolves to a loopback address (127.0.0.5)'],
      ['https://2130706438/', 'the host resolves to a loopback address (127.0.0.6)'],
      ['https://localhost./', 'the host localhost. is a loopback name'],
    ]) {
      const source = await save(saveArgs({ url }));
      const { observation } = await calls.ok<{ observation: Observation }>('ads_check_competitor_source', {
        source_id: source.source_id,
      });
      assert.equal(observation.outcome, 'refused', url);
      assert.equal(observation.reason_message, message, url);
    }
  });

  test('a second check of a host within seconds is refused with the wait', async () => {
    const first = await save(saveArgs({ url: 'https://127.0.0.9/a' }));
    const second = await save(saveArgs({ url: 'https://127.0.0.9/b' }));
    await calls.ok('ads_check_competitor_source', { source_id: first.source_id });
    const err = await calls.refused('ads_check_competitor_source', { source_id: second.source_id });
    assert.equal(err.code, 'rate_limited');
    assert.match(err.message, /^127\.0\.0\.9 was fetched less than 10 s ago: .* try again in \d+ s$/);
  });
});

describe('pausing', () => {
  test('the creator may pause a source; pausing again changes nothing', async () => {
    const source = await save(saveArgs({ url: 'https://127.0.0.2/', enabled: true }), editor);
    const paused = (
      await calls.ok<{ source: Source }>(
        'ads_pause_competitor_source',
        { source_id: source.source_id },
        editor,
      )
    ).source;
    assert.equal(paused.schedule_state, 'paused');
    assert.equal(paused.next_check_at, null);
    assert.ok(paused.paused_at);
    const again = (
      await calls.ok<{ source: Source }>(
        'ads_pause_competitor_source',
        { source_id: source.source_id },
        editor,
      )
    ).source;
    assert.equal(again.revision, paused.revision);
  });

  test('another editor may not pause it; a workspace admin may', async () => {
    const source = await save(saveArgs({ url: 'https://127.0.0.3/', enabled: true }), editor);
    const err = await calls.refused(
      'ads_pause_competitor_source',
      { source_id: source.source_id },
      otherEditor,
    );
    assert.equal(err.code, 'permission_denied');
    assert.match(err.message, /only the member who created source .* or a workspace admin may pause it/);
    const paused = (
      await calls.ok<{ source: Source }>(
        'ads_pause_competitor_source',
        { source_id: source.source_id },
        admin,
      )
    ).source;
    assert.equal(paused.schedule_state, 'paused');
  });
});

describe('the schedule', () => {
  test('an enabled source is checked on the bus without being asked, and the refusal is its evidence', async () => {
    // Due within a minute of the save, found within 30 s of being due.
    const deadline = Date.now() + 120_000;
    let observations: Observation[] = [];
    while (Date.now() < deadline) {
      ({ observations } = await calls.ok<{ observations: Observation[] }>('ads_get_competitor_observations', {
        source_id: scheduled.source_id,
      }));
      if (observations.length > 0) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    const [observation] = observations;
    // What the service did instead (its scheduler's and checks' lines, not the rpc lines of this polling).
    const serviceLines = stack.recentOutput('marketing').filter((line) => !line.includes('"msg":"rpc'));
    assert.ok(
      observation,
      `no scheduled check of ${scheduled.url} (due at ${scheduled.next_check_at}) within 120 s; the marketing service said:\n${serviceLines.join('\n')}`,
    );
    assert.equal(observation.trigger, 'scheduled');
    assert.equal(observation.outcome, 'refused');
    assert.equal(observation.reason_message, 'the host resolves to a loopback address (127.0.0.20)');
    const list = await calls.ok<{ sources: Source[] }>('ads_list_competitor_sources', { limit: 100 });
    const listed = list.sources.find((s) => s.source_id === scheduled.source_id);
    assert.equal(listed?.last_check?.observation_id, observation.observation_id);
    assert.ok(
      listed?.next_check_at && Date.parse(listed.next_check_at) > Date.now() + 23 * 3_600_000,
      'next check a day on',
    );
  });
});
