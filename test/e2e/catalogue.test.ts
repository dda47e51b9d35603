/**
 * The catalogue as a client sees it, through the real processes: every tool publishes the shape of
 * its results, errors carry what a program needs, and a tool whose service is down says whether
 * anything happened.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';

let e2e: SeededStack;
let agent: McpTestClient;

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '500' } });
  agent = await connectClient('v1', e2e.stack.mcpUrl, e2e.seed.token);
});

after(async () => {
  await agent?.close();
  await e2e?.stop();
});

type ErrorResult = { error: { code: string; message: string; [k: string]: unknown } };

async function call(client: McpTestClient, name: string, args: Record<string, unknown> = {}) {
  const res = await client.callTool(name, args);
  return { isError: res.isError === true, data: res.structuredContent as Record<string, unknown> };
}

describe('the published catalogue', () => {
  test('every tool publishes an object output schema that admits its results and its errors', async () => {
    const { tools } = (await agent.listTools()) as {
      tools: { name: string; outputSchema?: { type?: string; anyOf?: unknown[] } }[];
    };
    assert.ok(tools.length > 0);
    for (const t of tools) {
      assert.equal(t.outputSchema?.type, 'object', `${t.name} has no object output schema`);
      assert.equal(t.outputSchema?.anyOf?.length, 2, `${t.name}: its result shape or the error shape`);
    }
  });

  test('pausing an optimizer is annotated idempotent; reads are idempotent and read-only', async () => {
    const { tools } = await agent.listTools();
    const pause = tools.find((t) => t.name === 'ads_pause_optimizer');
    assert.equal(pause?.annotations?.idempotentHint, true);
    assert.equal(pause?.annotations?.readOnlyHint, false);
    const save = tools.find((t) => t.name === 'ads_save_optimizer');
    assert.equal(save?.annotations?.idempotentHint, false);
  });
});

describe('errors a program can act on', () => {
  test('a stale revision carries the current revision as a field', async () => {
    const saved = await call(agent, 'ads_save_marketing_item', {
      kind: 'playbook',
      name: 'Stale check',
      data: { guidance: 'Lead with the offer.', evidence: 'hypothesis' },
    });
    assert.equal(saved.isError, false, JSON.stringify(saved.data));
    const item = saved.data.item as { item_id: string; revision: number };
    const update = (expected: number) =>
      call(agent, 'ads_save_marketing_item', {
        item_id: item.item_id,
        expected_revision: expected,
        kind: 'playbook',
        name: 'Stale check',
        data: { guidance: `Revision after ${expected}.`, evidence: 'hypothesis' },
      });
    assert.equal((await update(1)).isError, false);
    const stale = await update(1);
    assert.equal(stale.isError, true);
    const { error } = stale.data as ErrorResult;
    assert.equal(error.code, 'stale_revision');
    assert.equal(error.current_revision, 2);
    assert.match(error.message, /revision 2/);
  });

  test('a read-only viewer can revoke its own credential, and only its own', async () => {
    const { stack, seed } = e2e;
    await stack.admin([
      'add-user',
      '--workspace',
      seed.workspaceId,
      '--email',
      'viewer@catalogue.example',
      '--password',
      'viewer-pass-1',
      '--role',
      'viewer',
    ]);
    const issued = JSON.parse(
      await stack.admin([
        'create-token',
        '--workspace',
        seed.workspaceId,
        '--user',
        'viewer@catalogue.example',
        '--scopes',
        'read',
      ]),
    ) as { token: string; credential_id: string };
    const viewer = await connectClient('v1', stack.mcpUrl, issued.token);
    try {
      const revoked = await call(viewer, 'ads_disconnect_client');
      assert.equal(revoked.isError, false, JSON.stringify(revoked.data));
      assert.equal(revoked.data.credential_id, issued.credential_id);
      await assert.rejects(viewer.callTool('ads_get_connection_context'), /401|nauthorized/);
    } finally {
      await viewer.close().catch(() => {});
    }
    // The agent's own credential was not touched.
    assert.equal((await call(agent, 'ads_get_connection_context')).isError, false);
  });
});

describe('a service that is down', () => {
  test('a read says the service is not answering and to retry; a write refused before it was sent says nothing was done', async () => {
    const { stack } = e2e;
    const saved = await call(agent, 'ads_save_marketing_item', {
      kind: 'playbook',
      name: 'Down check',
      data: { guidance: 'Keep it short.', evidence: 'hypothesis' },
    });
    const itemId = (saved.data.item as { item_id: string }).item_id;
    await stack.kill('marketing', 'SIGKILL');
    try {
      const read = await call(agent, 'ads_get_marketing_item', { item_id: itemId });
      assert.equal(read.isError, true);
      const readError = (read.data as ErrorResult).error;
      assert.equal(readError.code, 'unavailable');
      assert.match(readError.message, /not answering; retry shortly/);
      assert.doesNotMatch(readError.message, /outcome is unknown/);
      const write = await call(agent, 'ads_archive_marketing_item', {
        item_id: itemId,
        expected_revision: 1,
      });
      const writeError = (write.data as ErrorResult).error;
      assert.equal(writeError.code, 'unavailable');
      assert.match(writeError.message, /not answering and nothing was done; retry shortly/);
    } finally {
      await stack.restart('marketing');
    }
    const again = await call(agent, 'ads_get_marketing_item', { item_id: itemId });
    assert.equal(again.isError, false, JSON.stringify(again.data));
  });
});
