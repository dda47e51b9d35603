/**
 * The MCP surface beyond tools, through the official clients (the v1 SDK client at 2025-11-25 and
 * the v2 client in both eras): resources (reports, image assets, standards, a change's review text,
 * the catalogue) listed and read, a template read, isolation between two workspaces, prompts with
 * typed arguments, completion of arguments by name prefix, caching hints and resource links.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { newWorkspaceToken, type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { validData } from '@adsmcp/testkit/marketing-items';
import { connectClient, type McpTestClient, rawPost } from '@adsmcp/testkit/mcp-clients';
import { toolCalls } from '@adsmcp/testkit/tool-calls';
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as TransportV2,
} from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import sharp from 'sharp';

type Kind = 'v1' | 'v2-2025' | 'v2-2026';
const KINDS: readonly Kind[] = ['v1', 'v2-2025', 'v2-2026'];

interface Contents {
  uri: string;
  mimeType?: string;
  text?: string;
  blob?: string;
}

/** The calls of this file, the same on both client generations. */
interface SurfaceClient {
  listResources(): Promise<{ resources: { uri: string; name: string; mimeType?: string }[] } & Hints>;
  listResourceTemplates(): Promise<{ resourceTemplates: { uriTemplate: string }[] } & Hints>;
  readResource(uri: string): Promise<{ contents: Contents[] } & Hints>;
  listPrompts(): Promise<
    { prompts: { name: string; arguments?: { name: string; required?: boolean }[] }[] } & Hints
  >;
  getPrompt(
    name: string,
    args: Record<string, string>,
  ): Promise<{ messages: { role: string; content: { type: string; text?: string } }[] }>;
  complete(
    ref: { type: 'ref/prompt'; name: string } | { type: 'ref/resource'; uri: string },
    argument: { name: string; value: string },
    context?: Record<string, string>,
  ): Promise<{ completion: { values: string[]; total?: number; hasMore?: boolean } }>;
  listTools(): Promise<Hints>;
  close(): Promise<void>;
}

interface Hints {
  ttlMs?: number;
  cacheScope?: string;
}

async function connect(kind: Kind, mcpUrl: string, token: string): Promise<SurfaceClient> {
  const url = new URL(mcpUrl);
  const client =
    kind === 'v1'
      ? new ClientV1({ name: 'resources-v1', version: '1.0.0' })
      : new ClientV2(
          { name: `resources-${kind}`, version: '1.0.0' },
          kind === 'v2-2026' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {},
        );
  if (client instanceof ClientV1) {
    await client.connect(
      new TransportV1(url, { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
    );
  } else {
    await client.connect(new TransportV2(url, { authProvider: { token: async () => token } }));
  }
  // Both generations have these methods with these shapes; the casts name what this file reads.
  const c = client as unknown as {
    listResources(): Promise<unknown>;
    listResourceTemplates(): Promise<unknown>;
    readResource(p: { uri: string }): Promise<unknown>;
    listPrompts(): Promise<unknown>;
    getPrompt(p: { name: string; arguments: Record<string, string> }): Promise<unknown>;
    complete(p: unknown): Promise<unknown>;
    listTools(): Promise<unknown>;
    close(): Promise<void>;
  };
  return {
    listResources: () => c.listResources() as ReturnType<SurfaceClient['listResources']>,
    listResourceTemplates: () =>
      c.listResourceTemplates() as ReturnType<SurfaceClient['listResourceTemplates']>,
    readResource: (uri) => c.readResource({ uri }) as ReturnType<SurfaceClient['readResource']>,
    listPrompts: () => c.listPrompts() as ReturnType<SurfaceClient['listPrompts']>,
    getPrompt: (name, args) =>
      c.getPrompt({ name, arguments: args }) as ReturnType<SurfaceClient['getPrompt']>,
    complete: (ref, argument, context) =>
      c.complete({ ref, argument, ...(context ? { context: { arguments: context } } : {}) }) as ReturnType<
        SurfaceClient['complete']
      >,
    listTools: () => c.listTools() as Promise<Hints>,
    close: () => c.close(),
  };
}

/** The JSON-RPC error a call was refused with: its code, message and data. */
async function refusal(
  call: Promise<unknown>,
  what = 'the call',
): Promise<{ code: number; message: string; data?: unknown }> {
  let answer: unknown;
  try {
    answer = await call;
  } catch (err) {
    const e = err as { code?: unknown; message?: unknown; data?: unknown };
    assert.equal(typeof e.code, 'number', `not a JSON-RPC error: ${String(err)}`);
    return { code: e.code as number, message: String(e.message), data: e.data };
  }
  assert.fail(`${what} was answered, not refused: ${JSON.stringify(answer).slice(0, 300)}`);
}

let e2e: SeededStack;
let agent: McpTestClient;
const { ok } = toolCalls(() => agent);
const clients = new Map<Kind, SurfaceClient>();
let other: SurfaceClient;
let account: { account_id: string; name: string };
let reportId: string;
let assetId: string;
let assetSha: string;
let changeId: string;
let changeDigest: string;
let changeSummary: string;
let itemId: string;
let changeLinks: unknown[];

const DAY_MS = 86_400_000;
const daysAgo = (days: number) => new Date(Date.now() - days * DAY_MS).toISOString().slice(0, 10);

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '1000', UPSTREAM_BURST: '1000' } });
  agent = await connectClient('v1', e2e.stack.mcpUrl, e2e.seed.token);
  account = e2e.seed.accounts[0] as { account_id: string; name: string };
  const accountId = account.account_id;
  reportId = (
    await ok<{ report: { report_id: string } }>('ads_create_performance_report', {
      account_id: accountId,
      name: 'Resource week',
      since: daysAgo(9),
      until: daysAgo(3),
    })
  ).report.report_id;
  const png = await sharp({ create: { width: 120, height: 100, channels: 3, background: '#3a7' } })
    .png()
    .toBuffer();
  const saved = await ok<{ asset: { asset_id: string; sha256: string } }>('ads_save_campaign_asset', {
    account_id: accountId,
    name: 'Hero image',
    content_base64: png.toString('base64'),
  });
  assetId = saved.asset.asset_id;
  assetSha = saved.asset.sha256;
  await ok('ads_save_account_standard', {
    account_id: accountId,
    name: 'Naming',
    kind: 'standard',
    data: { naming_prefix: 'RES-' },
  });
  const ads = await ok<{ ads: { id: string; name: string }[] }>('ads_list_ads', {
    account_id: accountId,
    limit: 1,
  });
  const ad = ads.ads[0] as { id: string };
  const prepared = await agent.callTool('ads_update_ad', {
    account_id: accountId,
    ad_id: ad.id,
    body: { name: 'RES- spring hero' },
  });
  const change = prepared.structuredContent as { change_id: string; digest: string; summary: string };
  changeId = change.change_id;
  changeDigest = change.digest;
  changeSummary = change.summary;
  changeLinks = prepared.content.filter((c) => (c as { type: string }).type === 'resource_link');
  itemId = (
    await ok<{ item: { item_id: string } }>('ads_save_marketing_item', {
      kind: 'creative',
      name: 'Zesty spring hook',
      data: { account_id: accountId, ad_id: ad.id, hook: 'Spring', offer: '2 for 1' },
    })
  ).item.item_id;
  for (const kind of KINDS) clients.set(kind, await connect(kind, e2e.stack.mcpUrl, e2e.seed.token));
  const elsewhere = await newWorkspaceToken(e2e.stack, 'Other workspace');
  other = await connect('v2-2026', e2e.stack.mcpUrl, elsewhere.token);
});

after(async () => {
  for (const c of clients.values()) await c.close();
  await other?.close();
  await agent?.close();
  await e2e?.stop();
});

const reportUri = (format: string) => `adsmcp://reports/${reportId}/${format}`;
const assetUri = () => `adsmcp://assets/${assetId}`;
const reviewUri = () => `adsmcp://changes/${changeId}/review`;
const viewFragmentUri = () => `ui://adsmcp/change-review/${changeId}`;
const standardsUri = () => `adsmcp://accounts/${account.account_id}/standards`;

for (const kind of KINDS) {
  describe(`resources through the ${kind} client`, () => {
    const client = () => clients.get(kind) as SurfaceClient;

    test('resources/list shows the catalogue and the workspace’s report, asset, standards and change awaiting approval', async () => {
      const { resources } = await client().listResources();
      const byUri = new Map(resources.map((r) => [r.uri, r]));
      assert.equal(byUri.get('adsmcp://catalogue.json')?.mimeType, 'application/json');
      assert.equal(byUri.get(reportUri('csv'))?.mimeType, 'text/csv');
      assert.equal(byUri.get(reportUri('markdown'))?.mimeType, 'text/markdown');
      assert.equal(byUri.get(reportUri('json'))?.mimeType, 'application/json');
      assert.equal(byUri.get(assetUri())?.mimeType, 'image/png');
      assert.ok(byUri.has(standardsUri()), 'the account’s standards are listed');
      assert.equal(byUri.get(reviewUri())?.mimeType, 'text/markdown');
      // The MCP Apps view prepare tools link is listed, so a host can fetch and vet it ahead of a call.
      assert.equal(byUri.get('ui://adsmcp/change-review')?.mimeType, 'text/html;profile=mcp-app');
      // An image is listed without any delivery link or token to it.
      assert.doesNotMatch(JSON.stringify(resources), /token=|\/assets\/[^"]*\?/);
    });

    test('a report reads as CSV, Markdown and JSON, as ads_get_performance_report gives it', async () => {
      for (const format of ['csv', 'markdown'] as const) {
        const read = await client().readResource(reportUri(format));
        const tool = await ok<{ content: string; media_type: string }>('ads_get_performance_report', {
          report_id: reportId,
          format,
        });
        assert.equal(read.contents[0]?.text, tool.content);
        assert.equal(read.contents[0]?.mimeType, tool.media_type);
      }
      const json = await client().readResource(reportUri('json'));
      const report = JSON.parse(json.contents[0]?.text ?? '{}') as { report_id: string; name: string };
      assert.equal(report.report_id, reportId);
      assert.equal(report.name, 'Resource week');
    });

    test('an image asset reads as the stored image: a blob with its media type', async () => {
      const read = await client().readResource(assetUri());
      const blob = read.contents[0]?.blob ?? '';
      assert.equal(read.contents[0]?.mimeType, 'image/png');
      assert.equal(createHash('sha256').update(Buffer.from(blob, 'base64')).digest('hex'), assetSha);
    });

    test('a change’s review text holds its summary, the exact request and its digest', async () => {
      const text = (await client().readResource(reviewUri())).contents[0]?.text ?? '';
      assert.ok(text.includes(changeSummary), text);
      assert.match(text, /POST \/ads\/\S+/);
      assert.ok(text.includes('"name":"RES- spring hero"'), text);
      assert.ok(text.includes(changeDigest), text);
    });

    test('the standards and the catalogue read as JSON', async () => {
      const standards = JSON.parse(
        (await client().readResource(standardsUri())).contents[0]?.text ?? '{}',
      ) as {
        standards: { name: string }[];
      };
      assert.deepEqual(
        standards.standards.map((s) => s.name),
        ['Naming'],
      );
      const catalogue = (await client().readResource('adsmcp://catalogue.json')).contents[0]?.text ?? '';
      const served = await (await fetch(`${e2e.stack.gatewayUrl}/catalogue.json`)).text();
      assert.deepEqual(JSON.parse(catalogue), JSON.parse(served));
    });

    test('the templates are listed, and a template expanded for a report is read', async () => {
      const { resourceTemplates } = await client().listResourceTemplates();
      assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate).sort(), [
        'adsmcp://accounts/{account_id}/standards',
        'adsmcp://assets/{asset_id}',
        'adsmcp://changes/{change_id}/review',
        'adsmcp://reports/{report_id}/{format}',
        'ui://adsmcp/change-review/{change_id}',
      ]);
      const template = resourceTemplates.find((t) => t.uriTemplate.startsWith('adsmcp://reports/'));
      const uri = (template?.uriTemplate ?? '')
        .replace('{report_id}', reportId)
        .replace('{format}', 'markdown');
      assert.match((await client().readResource(uri)).contents[0]?.text ?? '', /\|/);
      const fragment = (await client().readResource(viewFragmentUri())).contents[0];
      assert.equal(fragment?.mimeType, 'text/html');
      assert.ok(fragment?.text?.includes(changeDigest), 'the view’s fragment shows the change’s digest');
    });

    test('a template variable out of its rule, and a URI of nothing, are refused naming what is wrong', async () => {
      const badFormat = await refusal(client().readResource(`adsmcp://reports/${reportId}/pdf`));
      assert.equal(badFormat.code, -32602);
      assert.match(badFormat.message, /`format` must be one of json, csv, markdown/);
      const badId = await refusal(client().readResource('adsmcp://changes/not-a-uuid/review'));
      assert.match(badId.message, /`change_id` must be a UUID/);
      const badView = await refusal(client().readResource('ui://adsmcp/change-review/not-a-uuid'));
      assert.match(badView.message, /`change_id` must be a UUID/);
      const nothing = await refusal(client().readResource('adsmcp://nothing/here'));
      assert.equal(nothing.code, -32602);
      assert.deepEqual(nothing.data, { uri: 'adsmcp://nothing/here' });
      // A URI longer than any resource's is refused by its length, not echoed back whole.
      for (const length of [3000, 10_000]) {
        const long = await refusal(client().readResource(`adsmcp://reports/${'a'.repeat(length)}`));
        assert.equal(long.code, -32602);
        assert.match(long.message, /`uri` must be at most 2048 characters \(got \d+\)/);
        assert.ok(long.message.length < 200, `${long.message.length} characters`);
      }
    });

    test('prompts are listed with typed arguments and got with them', async () => {
      const { prompts } = await client().listPrompts();
      assert.deepEqual(prompts.map((p) => p.name).sort(), [
        'answer_optimizer_run',
        'import_and_report',
        'launch_from_brief',
        'triage_serving_issues',
        'weekly_account_review',
      ]);
      const review = prompts.find((p) => p.name === 'weekly_account_review');
      assert.deepEqual(
        review?.arguments?.map((a) => [a.name, a.required]),
        [
          ['account_id', true],
          ['week_ending', false],
        ],
      );
      const got = await client().getPrompt('weekly_account_review', {
        account_id: account.account_id,
        week_ending: '2026-11-22',
      });
      const text = got.messages[0]?.content.text ?? '';
      assert.ok(text.includes(account.account_id) && text.includes('2026-11-22'), text);
      assert.match(text, /ads_create_performance_report/);
    });

    test('a prompt’s missing or malformed argument is refused naming it and the rule', async () => {
      const missing = await refusal(
        client().getPrompt('import_and_report', { account_id: account.account_id }),
      );
      assert.equal(missing.code, -32602);
      assert.match(missing.message, /`arguments\.since` is required/);
      const badDate = await refusal(
        client().getPrompt('import_and_report', {
          account_id: account.account_id,
          since: '22/11/2026',
          until: '2026-11-23',
        }),
      );
      assert.match(badDate.message, /`arguments\.since` must be a date YYYY-MM-DD/);
      // A day that does not exist is no date, though Date.parse would roll it into March.
      const noSuchDay = await refusal(
        client().getPrompt('weekly_account_review', {
          account_id: account.account_id,
          week_ending: '2026-02-30',
        }),
      );
      assert.match(noSuchDay.message, /`arguments\.week_ending` must be a date YYYY-MM-DD/);
      const unknown = await refusal(client().getPrompt('no_such_prompt', {}));
      assert.match(unknown.message, /`name` must name a prompt/);
    });

    test('completion offers the workspace’s accounts, campaigns, marketing items and changes by name or id prefix', async () => {
      const accounts = await client().complete(
        { type: 'ref/prompt', name: 'weekly_account_review' },
        { name: 'account_id', value: account.name.slice(0, 3) },
      );
      assert.ok(accounts.completion.values.includes(account.account_id), JSON.stringify(accounts));
      const items = await client().complete(
        { type: 'ref/prompt', name: 'launch_from_brief' },
        { name: 'item_id', value: 'zesty' },
      );
      assert.deepEqual(items.completion.values, [itemId]);
      const changes = await client().complete(
        { type: 'ref/resource', uri: 'adsmcp://changes/{change_id}/review' },
        { name: 'change_id', value: changeId.slice(0, 6) },
      );
      assert.deepEqual(changes.completion.values, [changeId]);
      assert.deepEqual(
        [changes.completion.total, changes.completion.hasMore],
        [1, false],
        'every change was read',
      );
      // The MCP Apps view's template, listed beside the others, completes its variable too.
      const viewed = await client().complete(
        { type: 'ref/resource', uri: 'ui://adsmcp/change-review/{change_id}' },
        { name: 'change_id', value: changeId.slice(0, 6) },
      );
      assert.deepEqual(viewed.completion.values, [changeId]);
      const campaigns = await ok<{ campaigns: { id: string; name: string }[] }>('ads_list_campaigns', {
        account_id: account.account_id,
      });
      const campaign = campaigns.campaigns[0] as { id: string; name: string };
      const offered = await client().complete(
        { type: 'ref/prompt', name: 'triage_serving_issues' },
        { name: 'campaign_id', value: campaign.name.slice(0, 4) },
        { account_id: account.account_id },
      );
      assert.ok(offered.completion.values.includes(campaign.id), JSON.stringify(offered));
      const withoutAccount = await client().complete(
        { type: 'ref/prompt', name: 'triage_serving_issues' },
        { name: 'campaign_id', value: '' },
      );
      assert.deepEqual(withoutAccount.completion.values, []);
      const formats = await client().complete(
        { type: 'ref/resource', uri: 'adsmcp://reports/{report_id}/{format}' },
        { name: 'format', value: 'm' },
      );
      assert.deepEqual(formats.completion.values, ['markdown']);
      // A name every object inherits (constructor, toString) is no template and no variable.
      const inherited = await refusal(
        client().complete(
          { type: 'ref/resource', uri: 'adsmcp://assets/{asset_id}' },
          { name: 'constructor', value: '' },
        ),
      );
      assert.match(
        inherited.message,
        /`argument\.name` is not a variable of adsmcp:\/\/assets\/\{asset_id\}/,
      );
      const noTemplate = await refusal(
        client().complete({ type: 'ref/resource', uri: 'toString' }, { name: 'name', value: '' }),
      );
      assert.match(noTemplate.message, /`ref\.uri` must be a resource template/);
    });
  });
}

describe('workspace isolation', () => {
  test('another workspace lists none of these records and reads none of them', async () => {
    const { resources } = await other.listResources();
    const listed = resources.map((r) => r.uri);
    for (const uri of [reportUri('csv'), assetUri(), reviewUri(), standardsUri()]) {
      assert.ok(!listed.includes(uri), `${uri} is listed to another workspace`);
    }
    for (const uri of [
      reportUri('csv'),
      reportUri('json'),
      assetUri(),
      reviewUri(),
      standardsUri(),
      viewFragmentUri(),
    ]) {
      const refused = await refusal(other.readResource(uri), uri);
      assert.equal(refused.code, -32602, `${uri}: ${refused.message}`);
      assert.deepEqual(refused.data, { uri });
    }
  });

  test('another workspace is offered none of these records to complete, and its prompts refuse the account', async () => {
    const accounts = await other.complete(
      { type: 'ref/prompt', name: 'weekly_account_review' },
      { name: 'account_id', value: '' },
    );
    assert.ok(!accounts.completion.values.includes(account.account_id));
    const items = await other.complete(
      { type: 'ref/prompt', name: 'launch_from_brief' },
      { name: 'item_id', value: '' },
    );
    assert.deepEqual(items.completion.values, []);
    const refused = await refusal(
      other.getPrompt('weekly_account_review', { account_id: account.account_id }),
    );
    assert.match(refused.message, /`arguments\.account_id` names no ad account of this workspace/);
  });
});

describe('caching hints (2026-07-28) and resource links', () => {
  const modern = () => clients.get('v2-2026') as SurfaceClient;

  test('every list and read result carries the hint that is true of it', async () => {
    const pick = (h: Hints) => ({ ttlMs: h.ttlMs, cacheScope: h.cacheScope });
    // The workspace's features can change at any moment: private and short.
    assert.deepEqual(pick(await modern().listTools()), { ttlMs: 30_000, cacheScope: 'private' });
    // Records are saved by anyone in the workspace at any moment.
    assert.deepEqual(pick(await modern().listResources()), { ttlMs: 0, cacheScope: 'private' });
    // The server's own make-up, the same for every caller.
    assert.deepEqual(pick(await modern().listResourceTemplates()), { ttlMs: 300_000, cacheScope: 'public' });
    assert.deepEqual(pick(await modern().listPrompts()), { ttlMs: 300_000, cacheScope: 'public' });
    // A saved report never changes: read twice, it is the same.
    const first = await modern().readResource(reportUri('csv'));
    assert.deepEqual(pick(first), { ttlMs: 86_400_000, cacheScope: 'private' });
    assert.equal(
      (await clients.get('v1')?.readResource(reportUri('csv')))?.contents[0]?.text,
      first.contents[0]?.text,
    );
    assert.deepEqual(pick(await modern().readResource(standardsUri())), { ttlMs: 0, cacheScope: 'private' });
  });

  test('a prepared change links its review text, which reads', async () => {
    assert.deepEqual(changeLinks, [
      {
        type: 'resource_link',
        uri: reviewUri(),
        name: `review of change ${changeId}`,
        description: 'What a person reviews before approving: the summary, the exact request and its digest.',
        mimeType: 'text/markdown',
      },
    ]);
    const text = (await modern().readResource(reviewUri())).contents[0]?.text ?? '';
    assert.ok(text.includes(changeDigest));
    // A 2025-era call the SDK serves (one asking for progress) links it too, as the plain one does.
    const res = await rawPost(
      e2e.stack.mcpUrl,
      {
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'ads_get_change', arguments: { change_id: changeId }, _meta: { progressToken: 1 } },
      },
      { authorization: `Bearer ${e2e.seed.token}`, 'mcp-protocol-version': '2025-06-18' },
    );
    assert.equal(res.status, 200, res.text);
    const answer = res.text
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map(
        (line) =>
          JSON.parse(line.slice(6)) as {
            id?: number;
            result?: { content: { type: string; uri?: string }[] };
          },
      )
      .find((m) => m.id === 7);
    assert.deepEqual(
      answer?.result?.content.filter((c) => c.type === 'resource_link').map((c) => c.uri),
      [reviewUri()],
      res.text,
    );
  });
});

describe('malformed requests', () => {
  test('bad params of resources/read, prompts/get and completion/complete are a bad request naming the field', async () => {
    const cases: [string, unknown, RegExp][] = [
      ['resources/read', {}, /`params\.uri`: expected string, received undefined/],
      ['prompts/get', { name: 5 }, /`params\.name`: expected string, received number/],
      [
        'completion/complete',
        { ref: { type: 'ref/prompt' }, argument: { name: 'account_id', value: '' } },
        /`params\.ref\.name`: expected string, received undefined/,
      ],
    ];
    for (const [method, params, message] of cases) {
      const res = await rawPost(
        e2e.stack.mcpUrl,
        { jsonrpc: '2.0', id: 9, method, params },
        { authorization: `Bearer ${e2e.seed.token}`, 'mcp-protocol-version': '2025-11-25' },
      );
      assert.equal(res.status, 400, res.text);
      const body = res.json as { id: number; error: { code: number; message: string } };
      assert.equal(body.id, 9);
      assert.equal(body.error.code, -32602);
      assert.match(body.error.message, message);
    }
  });
});

describe('completion of a long list', () => {
  test('a list longer than a completion reads says it has more and gives no total, rather than claiming an old record absent', async () => {
    const many = await newWorkspaceToken(e2e.stack, 'Many briefs');
    const writer = await connectClient('v1', e2e.stack.mcpUrl, many.token);
    const surface = await connect('v2-2026', e2e.stack.mcpUrl, many.token);
    try {
      const save = async (name: string) => {
        const res = await writer.callTool('ads_save_marketing_item', {
          kind: 'brief',
          name,
          data: validData('brief'),
        });
        assert.notEqual(res.isError, true, JSON.stringify(res.structuredContent));
      };
      await save('Oldest brief');
      // 500 newer ones: as many as a completion reads of a list.
      for (let i = 0; i < 500; i += 25)
        await Promise.all(Array.from({ length: 25 }, (_, j) => save(`Filler ${i + j}`)));
      const launch = { type: 'ref/prompt', name: 'launch_from_brief' } as const;
      const oldest = await surface.complete(launch, { name: 'item_id', value: 'Oldest' });
      assert.deepEqual(oldest.completion.values, []);
      assert.equal(oldest.completion.hasMore, true, 'the list was read only in part');
      assert.equal(oldest.completion.total, undefined, 'no count that would claim to be all');
      const fillers = await surface.complete(launch, { name: 'item_id', value: 'filler' });
      assert.equal(fillers.completion.values.length, 100);
      assert.equal(fillers.completion.hasMore, true);
    } finally {
      await surface.close();
      await writer.close();
    }
  });
});

describe('prompt texts', () => {
  test('every tool a prompt tells the agent to use is one the server lists', async () => {
    const served = new Set((await agent.listTools()).tools.map((t) => t.name));
    const client = clients.get('v2-2026') as SurfaceClient;
    const someUuid = '0d4b6c1e-1a2b-4c3d-8e9f-0a1b2c3d4e5f';
    const args: Record<string, Record<string, string>> = {
      weekly_account_review: { account_id: account.account_id },
      launch_from_brief: { account_id: account.account_id, item_id: itemId },
      triage_serving_issues: { account_id: account.account_id },
      answer_optimizer_run: { optimizer_id: someUuid },
      import_and_report: { account_id: account.account_id, since: '2026-11-01', until: '2026-11-07' },
    };
    const { prompts } = await client.listPrompts();
    for (const prompt of prompts) {
      const got = await client.getPrompt(prompt.name, args[prompt.name] ?? {});
      const named = (got.messages[0]?.content.text ?? '').match(/\bads_[a-z_]+/g) ?? [];
      assert.ok(named.length > 0, `${prompt.name} names no tool`);
      for (const tool of named)
        assert.ok(served.has(tool), `${prompt.name} names ${tool}, which is not served`);
    }
  });
});

describe('a service that does not answer', () => {
  test('resources/list and completion say which request to retry, never the service’s own error code', async () => {
    const client = clients.get('v2-2025') as SurfaceClient;
    await e2e.stack.kill('marketing', 'SIGKILL');
    try {
      for (const [what, call] of [
        ['resources/list', () => client.listResources()],
        [
          'completion/complete',
          () =>
            client.complete(
              { type: 'ref/prompt', name: 'launch_from_brief' },
              { name: 'item_id', value: '' },
            ),
        ],
      ] as const) {
        const refused = await refusal(call(), what);
        assert.equal(refused.code, -32603, `${what}: ${refused.message}`);
        assert.match(refused.message, new RegExp(`a service ${what} needs did not answer; retry shortly`));
      }
    } finally {
      await e2e.stack.restart('marketing');
    }
    assert.ok((await client.listResources()).resources.length > 0, 'answered again once it is back');
  });
});
