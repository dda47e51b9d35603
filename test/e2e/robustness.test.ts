/**
 * Hostile input against every listed tool, through the real processes: each argument in turn is
 * replaced with values of the wrong type, out of range, huge, empty, unicode, injection-shaped
 * or deeply nested. Every answer must be a clean one — HTTP 200 with a result (a success or a
 * tool error that says what was wrong) or a JSON-RPC error — never an HTTP 500 and never a tool
 * error of code `internal`, and the server must keep answering.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, rawPost } from '@adsmcp/testkit/mcp-clients';

let e2e: SeededStack;
let tools: {
  name: string;
  inputSchema: { properties?: Record<string, { type?: string; format?: string }> };
}[];
let base: Record<string, unknown>;

const HOSTILE: unknown[] = [
  null,
  true,
  -1,
  0,
  1.5,
  1e308,
  2 ** 64,
  '',
  ' \t\n',
  'x'.repeat(100_000),
  '😀'.repeat(300),
  "'; DROP TABLE changes; --",
  '../../etc/passwd',
  '<script>alert(1)</script>',
  '00000000-0000-0000-0000-000000000000',
  'NaN',
  '\u0000\u0007',
  [],
  [null, 1, 'a'],
  {},
  { __proto__: { polluted: true }, constructor: { prototype: { polluted: true } } },
];

/** `{"a":{"a":…}}` nested `depth` times. */
function nested(depth: number): unknown {
  let v: unknown = 'bottom';
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
}

function parse(text: string): {
  result?: { isError?: boolean; structuredContent?: { error?: { code: string } } };
  error?: { code: number };
} {
  const line = text.split('\n').find((l) => l.startsWith('data: '));
  return JSON.parse(line ? line.slice(6) : text);
}

before(async () => {
  e2e = await startSeededStack({
    env: {
      MCP_RATE_PER_SECOND: '100000',
      MCP_RATE_BURST: '100000',
      UPSTREAM_BURST: '100000',
      UPSTREAM_RATE_PER_SECOND: '100000',
      SANDBOX_RATE_PER_SECOND: '100000',
    },
  });
  const client = await connectClient('v1', e2e.stack.mcpUrl, e2e.seed.token);
  try {
    tools = (await client.listTools()).tools as typeof tools;
    const account = e2e.seed.accounts[0]?.account_id as string;
    const ads = (await client.callTool('ads_list_ads', { account_id: account, limit: 1 }))
      .structuredContent as { ads: { id: string }[] };
    const first = async (tool: string, result: string) =>
      (
        (await client.callTool(tool, { account_id: account, limit: 1 })).structuredContent as Record<
          string,
          { id: string }[]
        >
      )[result]?.[0]?.id;
    base = {
      account_id: account,
      ad_id: ads.ads[0]?.id,
      ad_group_id: await first('ads_list_ad_groups', 'ad_groups'),
      campaign_id: await first('ads_list_campaigns', 'campaigns'),
      feed_id: await first('ads_list_product_feeds', 'product_feeds'),
      q: 'York',
      limit: 5,
    };
  } finally {
    await client.close();
  }
});

after(async () => {
  await e2e?.stop();
});

/**
 * Adds the ids the insight, conversion and audience tools name to `base`, so that each hostile
 * value is tried beside valid ones that reach the platform.
 */
async function addDataIds(): Promise<void> {
  const client = await connectClient('v1', e2e.stack.mcpUrl, e2e.seed.token);
  try {
    const read = async <T>(name: string, args: Record<string, unknown>) =>
      (await client.callTool(name, { account_id: base.account_id, ...args })).structuredContent as T;
    const ad = await read<{ ads: { ad_group_id: string }[] }>('ads_list_ads', { limit: 1 });
    const audiences = await read<{ custom_audiences: { id: string }[] }>('ads_list_custom_audiences', {
      limit: 1,
    });
    const pixels = await read<{ conversion_sources: { id: string }[] }>('ads_list_conversion_sources', {
      limit: 1,
    });
    Object.assign(base, {
      ad_group_id: ad.ads[0]?.ad_group_id,
      custom_audience_id: audiences.custom_audiences[0]?.id,
      pid: pixels.conversion_sources[0]?.id,
    });
  } finally {
    await client.close();
  }
}

test('no argument value, however hostile, makes any tool fail uncleanly', async () => {
  await addDataIds();
  let calls = 0;
  const unclean: string[] = [];
  for (const tool of tools) {
    const props = Object.keys(tool.inputSchema.properties ?? {});
    const valid = Object.fromEntries(props.filter((p) => p in base).map((p) => [p, base[p]]));
    const cases: Record<string, unknown>[] = [
      {},
      valid,
      { ...valid, unexpected: 1 },
      { ...valid, ['x'.repeat(5000)]: 1 },
    ];
    for (const prop of props) {
      for (const value of [...HOSTILE, nested(3000)]) cases.push({ ...valid, [prop]: value });
    }
    for (const args of cases) {
      calls++;
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: calls,
        method: 'tools/call',
        params: { name: tool.name, arguments: args },
      });
      // Disconnecting revokes the credential it is called with: each such call gets one of its own.
      const token =
        tool.name === 'ads_disconnect_client'
          ? (
              JSON.parse(await e2e.stack.admin(['create-token', '--workspace', e2e.seed.workspaceId])) as {
                token: string;
              }
            ).token
          : e2e.seed.token;
      const res = await rawPost(e2e.stack.mcpUrl, body, { authorization: `Bearer ${token}` });
      const label = `${tool.name} ${body.slice(0, 160)}`;
      if (res.status !== 200) {
        // At the HTTP level only three refusals are clean: the body limit, a property that could
        // reach a prototype, named in the message, and nesting past the depth limit, named too.
        const named =
          res.status === 400 &&
          /the property \\".*\\" is not accepted|deeper than the limit of \d+ levels/.test(res.text);
        if (res.status !== 413 && !named)
          unclean.push(`HTTP ${res.status}: ${label} -> ${res.text.slice(0, 200)}`);
        continue;
      }
      const msg = parse(res.text);
      const code = msg.result?.structuredContent?.error?.code;
      if (msg.result?.isError && (code === undefined || code === 'internal'))
        unclean.push(`tool error ${code}: ${label}`);
    }
  }
  assert.deepEqual(unclean, [], `${unclean.length} of ${calls} calls failed uncleanly`);
  assert.ok(calls > 500, `only ${calls} calls were made`);
  const health = await fetch(`${e2e.stack.gatewayUrl}/readyz`);
  assert.equal(health.status, 200);
});
