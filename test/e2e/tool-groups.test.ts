/**
 * Progressive discovery and paging, through the official clients (the v1 SDK client at 2025-11-25
 * and the v2 client in both eras): a connection whose MCP URL selects tool groups (`?tools=...`)
 * lists only their tools, calls them, and is told which group holds a tool it did not select; a
 * selection naming no group is refused naming the parameter; a token issued with tool groups
 * (`npm run admin -- create-token --tools ...`) is served those by default, its URL narrows within
 * them and is refused past them, and the connections page shows them; and `resources/list` pages
 * through more records than one page holds, with nothing left out.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { dashboardFormPost } from '@adsmcp/testkit/dashboard';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { CLIENT_KINDS, connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import { toolCalls } from '@adsmcp/testkit/tool-calls';
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as TransportV2,
} from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const ACCOUNTS_AND_REPORTING = [
  'ads_disconnect_client',
  'ads_get_ad',
  'ads_get_ad_group_insights',
  'ads_get_ad_insights',
  'ads_get_connection_context',
  'ads_list_accounts',
  'ads_list_ads',
];

let e2e: SeededStack;
let agent: McpTestClient;
const { ok } = toolCalls(() => agent);

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '1000', UPSTREAM_BURST: '1000' } });
  agent = await connectClient('v1', e2e.stack.mcpUrl, e2e.seed.token);
});

after(async () => {
  await agent?.close();
  await e2e?.stop();
});

/** The JSON-RPC error a call was refused with. */
async function refusal(call: Promise<unknown>): Promise<{ code: number; message: string; data?: unknown }> {
  let answer: unknown;
  try {
    answer = await call;
  } catch (err) {
    const e = err as { code?: unknown; message?: unknown; data?: unknown };
    return { code: Number(e.code), message: String(e.message), data: e.data };
  }
  assert.fail(`the call was answered, not refused: ${JSON.stringify(answer).slice(0, 300)}`);
}

for (const kind of CLIENT_KINDS) {
  describe(`tool groups through the ${kind} client`, () => {
    let selected: McpTestClient;
    before(async () => {
      selected = await connectClient(
        kind,
        `${e2e.stack.mcpUrl}?tools=accounts-and-reporting`,
        e2e.seed.token,
      );
    });
    after(async () => selected?.close());

    test('a connection selecting accounts-and-reporting lists only that group’s tools, and they work', async () => {
      const listed = await selected.listTools();
      assert.deepEqual(listed.tools.map((t) => t.name).sort(), ACCOUNTS_AND_REPORTING);
      const res = await selected.callTool('ads_list_accounts', {});
      assert.notEqual(res.isError, true, JSON.stringify(res.structuredContent));
      const accounts = (res.structuredContent as { accounts: { account_id: string }[] }).accounts;
      assert.deepEqual(
        accounts.map((a) => a.account_id).sort(),
        e2e.seed.accounts.map((a) => a.account_id).sort(),
      );
    });

    test('calling a tool of a group not selected is refused naming its group and how to select it', async () => {
      const refused = await refusal(
        selected.callTool('ads_save_marketing_item', { kind: 'note', name: 'x' }),
      );
      assert.equal(refused.code, -32602);
      assert.match(
        refused.message,
        /ads_save_marketing_item is in the tool group marketing, which this connection did not select \(it selected accounts-and-reporting\); connect with \?tools=accounts-and-reporting,marketing on the MCP URL/,
      );
      assert.doesNotMatch(refused.message, /unknown tool/);
    });
  });
}

test('a connection whose tools parameter names a group that does not exist is refused naming the parameter', async () => {
  const url = new URL(`${e2e.stack.mcpUrl}?tools=accounts-and-reporting,marketting`);
  const v1 = new ClientV1({ name: 'groups-v1', version: '1.0.0' });
  const v1Error = await refusal(
    v1.connect(
      new TransportV1(url, { requestInit: { headers: { authorization: `Bearer ${e2e.seed.token}` } } }),
    ),
  );
  const v2 = new ClientV2({ name: 'groups-v2', version: '1.0.0' });
  const v2Error = await refusal(
    v2.connect(new TransportV2(url, { authProvider: { token: async () => e2e.seed.token } })),
  );
  for (const err of [v1Error, v2Error]) {
    assert.match(
      err.message,
      /the MCP URL's `tools` query parameter must name tool groups separated by commas: accounts-and-reporting, campaign-creation, marketing, .* \(got \\?"marketting\\?"\)/,
    );
  }
});

describe('tool groups stored with a credential', () => {
  let token: string;
  let credentialId: string;
  before(async () => {
    const issued = JSON.parse(
      await e2e.stack.admin([
        'create-token',
        '--name',
        'reporting and marketing only',
        '--tools',
        'marketing, Accounts-and-Reporting',
      ]),
    ) as { token: string; credential_id: string; tool_groups: string[] };
    assert.deepEqual(issued.tool_groups, ['accounts-and-reporting', 'marketing']);
    ({ token, credential_id: credentialId } = issued);
  });

  test('a token issued with tool groups is served only theirs, without any tools parameter', async () => {
    const client = await connectClient('v2-2026', e2e.stack.mcpUrl, token);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(
        names.includes('ads_list_accounts') && names.includes('ads_save_marketing_item'),
        names.join(),
      );
      assert.ok(
        !names.includes('ads_list_optimizers'),
        'a group the token was not issued with is not listed',
      );
      const refused = await refusal(client.callTool('ads_list_optimizers', {}));
      assert.equal(refused.code, -32602);
      assert.match(
        refused.message,
        /ads_list_optimizers is in the tool group automation-and-optimization, which this credential was not issued with \(it was issued with accounts-and-reporting, marketing\)/,
      );
    } finally {
      await client.close();
    }
  });

  test('its URL narrows within the issued groups, and naming a group past them is refused naming the parameter', async () => {
    const narrowed = await connectClient('v1', `${e2e.stack.mcpUrl}?tools=accounts-and-reporting`, token);
    try {
      assert.deepEqual((await narrowed.listTools()).tools.map((t) => t.name).sort(), ACCOUNTS_AND_REPORTING);
    } finally {
      await narrowed.close();
    }
    const v2 = new ClientV2({ name: 'groups-v2', version: '1.0.0' });
    const widened = await refusal(
      v2.connect(
        new TransportV2(new URL(`${e2e.stack.mcpUrl}?tools=marketing,campaign-creation`), {
          authProvider: { token: async () => token },
        }),
      ),
    );
    assert.match(
      widened.message,
      /the MCP URL's `tools` query parameter names campaign-creation, which this credential was not issued with: it may select among accounts-and-reporting, marketing/,
    );
  });

  test('an unknown group at issuance is refused naming --tools, and no token is issued', async () => {
    const before = JSON.parse(await e2e.stack.admin(['list-tokens'])) as unknown[];
    await assert.rejects(
      e2e.stack.admin(['create-token', '--tools', 'marketing,reportng']),
      /--tools must name tool groups separated by commas: accounts-and-reporting, .* \(got "reportng"\)/,
    );
    await assert.rejects(e2e.stack.admin(['create-token', '--tools', ' , ']), /--tools .* \(got none\)/);
    const after = JSON.parse(await e2e.stack.admin(['list-tokens'])) as unknown[];
    assert.equal(after.length, before.length, 'no token was issued');
  });

  test('the connections page shows each connection’s tool groups', async () => {
    const signIn = await dashboardFormPost(e2e.stack.gatewayUrl, '/dashboard/login', '', {
      email: e2e.seed.dashboardUser,
      password: e2e.seed.dashboardPassword ?? '',
    });
    assert.equal(signIn.status, 303, 'signed in');
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    const html = await (
      await fetch(
        `${e2e.stack.gatewayUrl}/dashboard/connections?q=${encodeURIComponent('reporting and marketing')}`,
        {
          headers: { cookie },
        },
      )
    ).text();
    const row = new RegExp(`<tr data-connection="${credentialId}"[\\s\\S]*?</tr>`).exec(html)?.[0] ?? '';
    assert.match(row, /class="tool-groups">accounts-and-reporting, marketing<\/td>/, row);
  });
});

describe('resources/list pages', () => {
  test('more changes awaiting approval than one page holds are all listed across pages, each once', async () => {
    const account = e2e.seed.accounts[0] as { account_id: string };
    const groups = await ok<{ ad_groups: { id: string }[] }>('ads_list_ad_groups', {
      account_id: account.account_id,
    });
    const adGroupId = (groups.ad_groups[0] as { id: string }).id;
    const prepared: string[] = [];
    // One more than a page's 100 records, besides the catalogue and the standards of the first page.
    for (let batch = 0; batch < 11; batch++) {
      const made = await Promise.all(
        Array.from({ length: batch === 10 ? 5 : 10 }, () =>
          ok<{ change_id: string }>('ads_pause_ad_group', {
            account_id: account.account_id,
            ad_group_id: adGroupId,
          }),
        ),
      );
      prepared.push(...made.map((c) => c.change_id));
    }
    for (const kind of CLIENT_KINDS) {
      const client = await connectSurface(kind);
      try {
        const uris: string[] = [];
        let pages = 0;
        let cursor: string | undefined;
        do {
          const page = await client.listResources(cursor);
          pages += 1;
          uris.push(...page.resources.map((r) => r.uri));
          cursor = page.nextCursor;
        } while (cursor !== undefined && pages < 10);
        // The v2 client walks every page itself when asked without a cursor; the v1 client gets one.
        if (kind === 'v1') assert.ok(pages >= 2, `${prepared.length} changes were listed on one page`);
        assert.equal(new Set(uris).size, uris.length, `${kind}: a resource is listed twice`);
        for (const id of prepared) {
          assert.ok(uris.includes(`adsmcp://changes/${id}/review`), `${kind}: change ${id} is not listed`);
        }
        assert.equal(uris.filter((u) => u === 'adsmcp://catalogue.json').length, 1);
        const forged = Buffer.from(JSON.stringify({ kind: 'assets', accountId: 'x', offset: 0 })).toString(
          'base64url',
        );
        for (const cursor of ['not-a-cursor', forged]) {
          const bad = await refusal(client.listResources(cursor));
          assert.equal(bad.code, -32602);
          assert.match(bad.message, /`cursor` is not a cursor this server gave/);
        }
      } finally {
        await client.close();
      }
    }
  });
});

interface PagedClient {
  listResources(cursor?: string): Promise<{ resources: { uri: string }[]; nextCursor?: string | undefined }>;
  close(): Promise<void>;
}

async function connectSurface(kind: (typeof CLIENT_KINDS)[number]): Promise<PagedClient> {
  const url = new URL(e2e.stack.mcpUrl);
  if (kind === 'v1') {
    const client = new ClientV1({ name: 'paging-v1', version: '1.0.0' });
    await client.connect(
      new TransportV1(url, { requestInit: { headers: { authorization: `Bearer ${e2e.seed.token}` } } }),
    );
    return {
      listResources: (cursor) => client.listResources(cursor === undefined ? {} : { cursor }),
      close: () => client.close(),
    };
  }
  const client = new ClientV2(
    { name: `paging-${kind}`, version: '1.0.0' },
    kind === 'v2-2026' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {},
  );
  await client.connect(new TransportV2(url, { authProvider: { token: async () => e2e.seed.token } }));
  return {
    listResources: (cursor) => client.listResources(cursor === undefined ? {} : { cursor }),
    close: () => client.close(),
  };
}
