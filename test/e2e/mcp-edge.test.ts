/**
 * The MCP edge end to end: every process running, driven with the official v1 and v2 clients
 * and raw HTTP for the status rules.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { newWorkspaceToken, type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { CLIENT_KINDS, connectClient, rawPost } from '@adsmcp/testkit/mcp-clients';
import type { TestDatabase } from '@adsmcp/testkit/postgres';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import pg from 'pg';

let db: TestDatabase;
let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
const tokens: Record<string, string> = {};

function sseData(text: string): unknown {
  const line = text.split('\n').find((l) => l.startsWith('data: '));
  return line ? JSON.parse(line.slice(6)) : JSON.parse(text);
}

/** Every JSON-RPC message of an SSE response (a batch answers with one event per request). */
function sseMessages(
  text: string,
): { id?: unknown; result?: unknown; error?: { code: number; message: string } }[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('data: ') && l.length > 6)
    .map((l) => JSON.parse(l.slice(6)));
}

async function createToken(args: string[]): Promise<{ token: string; credential_id: string }> {
  return JSON.parse(await stack.admin(['create-token', '--workspace', seed.workspaceId, ...args])) as {
    token: string;
    credential_id: string;
  };
}

const callBody = (name: string, args: object = {}) => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name, arguments: args },
});
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

/**
 * One gateway replica's own MCP endpoint, not the stack's round-robin front: rate limits are kept
 * per gateway replica (README), so the tests that count requests to the exact 429 send them all
 * to one. With a single replica it is the stack's endpoint.
 */
const oneGateway = () => `${stack.replicaUrls.gateway[0]}/mcp`;

before(async () => {
  // A burst large enough for the suite's own calls; the 429 test drains a bucket of its own.
  // Behind a trusted proxy (X-Forwarded-For names the client), with a small failed-auth budget,
  // and a short time to send a request so that the 408 test is quick.
  e2e = await startSeededStack({
    env: {
      MCP_RATE_PER_SECOND: '5',
      MCP_RATE_BURST: '100',
      AUTH_FAILURES_PER_MINUTE: '20',
      TRUST_PROXY: 'true',
      REQUEST_TIMEOUT_SECONDS: '3',
    },
  });
  ({ stack, seed, db } = e2e);
  const [readOnly, expired, revoked, disconnect, rate, batchRate] = await Promise.all([
    createToken(['--scopes', 'read', '--name', 'read only']),
    createToken(['--name', 'soon expired']),
    createToken(['--name', 'to revoke']),
    createToken(['--name', 'to disconnect']),
    createToken(['--name', 'rate']),
    createToken(['--name', 'batch rate']),
  ]);
  tokens.batchRate = batchRate.token;

  tokens.readOnly = readOnly.token;
  tokens.expired = expired.token;
  tokens.revoked = revoked.token;
  tokens.disconnect = disconnect.token;
  tokens.rate = rate.token;
  await stack.admin(['revoke-token', revoked.credential_id]);
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  await c.query("UPDATE gateway.credentials SET expires_at = now() - interval '1 second' WHERE id = $1", [
    expired.credential_id,
  ]);
  await c.end();
  await stack.admin([
    'add-user',
    '--workspace',
    seed.workspaceId,
    '--email',
    'viewer@demo.example',
    '--password',
    'viewer-password-1',
    '--role',
    'viewer',
  ]);
  tokens.viewer = (await createToken(['--user', 'viewer@demo.example', '--name', 'viewer'])).token;
  tokens.other = (await newWorkspaceToken(stack, 'Other workspace')).token;
});

after(async () => {
  await e2e?.stop();
});

describe('every client generation', () => {
  for (const kind of CLIENT_KINDS) {
    test(`${kind}: lists exactly the catalogue's tools, with annotations`, async () => {
      const client = await connectClient(kind, stack.mcpUrl, seed.token);
      try {
        const { tools } = await client.listTools();
        const catalogue = (await (await fetch(`${stack.gatewayUrl}/catalogue.json`)).json()) as {
          tools: { name: string; inputSchema: unknown }[];
        };
        assert.deepEqual(
          tools.map((t) => t.name),
          catalogue.tools.map((t) => t.name),
        );
        const byName = new Map(tools.map((t) => [t.name, t]));
        assert.equal(byName.get('ads_get_connection_context')?.annotations?.readOnlyHint, true);
        assert.equal(byName.get('ads_disconnect_client')?.annotations?.readOnlyHint, false);
        assert.equal(byName.get('ads_disconnect_client')?.annotations?.destructiveHint, true);
        assert.deepEqual(byName.get('ads_list_accounts')?.inputSchema, {
          type: 'object',
          properties: {},
          additionalProperties: false,
        });
      } finally {
        await client.close();
      }
    });

    test(`${kind}: ads_get_connection_context reports workspace, access and expiry, and no secret`, async () => {
      const client = await connectClient(kind, stack.mcpUrl, seed.token);
      try {
        const res = await client.callTool('ads_get_connection_context');
        assert.notEqual(res.isError, true);
        const data = res.structuredContent as {
          workspace: { workspace_id: string; name: string };
          access: { scopes: string[]; role: string; can_prepare_changes: boolean };
          credential: { credential_id: string; expires_at: string | null };
        };
        assert.equal(data.workspace.workspace_id, seed.workspaceId);
        assert.equal(data.workspace.name, 'Demo workspace');
        assert.deepEqual([...data.access.scopes].sort(), ['read', 'write']);
        assert.equal(data.access.role, 'admin');
        assert.equal(data.access.can_prepare_changes, true);
        assert.equal(data.credential.credential_id, seed.credentialId);
        assert.ok(
          data.credential.expires_at === null || !Number.isNaN(Date.parse(data.credential.expires_at)),
        );
        // The same data as JSON text, and no credential anywhere in it.
        const text = (res.content[0] as { type: string; text: string }).text;
        assert.deepEqual(JSON.parse(text), res.structuredContent);
        assert.ok(!text.includes(seed.token));
        assert.ok(!text.includes(seed.token.slice(5, 20)));
      } finally {
        await client.close();
      }
    });

    test(`${kind}: an unknown argument is a tool error that names it`, async () => {
      const client = await connectClient(kind, stack.mcpUrl, seed.token);
      try {
        const res = await client.callTool('ads_get_connection_context', { verbose: true });
        assert.equal(res.isError, true);
        const err = (res.structuredContent as { error: { code: string; message: string } }).error;
        assert.equal(err.code, 'invalid_argument');
        assert.match(err.message, /unknown argument `verbose`/);
      } finally {
        await client.close();
      }
    });
  }
});

describe('ad accounts', () => {
  test('ads_list_accounts lists the two sandbox accounts, never a credential', async () => {
    const client = await connectClient('v2-2026', stack.mcpUrl, seed.token);
    try {
      const res = await client.callTool('ads_list_accounts');
      assert.notEqual(res.isError, true);
      const accounts = (res.structuredContent as { accounts: Record<string, unknown>[] }).accounts;
      assert.equal(accounts.length, 2);
      assert.deepEqual(accounts.map((a) => a.currency).sort(), ['EUR', 'USD']);
      for (const a of accounts) {
        assert.match(String(a.account_id), /^[0-9a-f-]{36}$/);
        assert.equal(a.can_write, true);
        assert.deepEqual(Object.keys(a).sort(), [
          'account_id',
          'can_write',
          'connection_can_write',
          'credential_expires_at',
          'credential_status',
          'currency',
          'freeze',
          'name',
          'time_zone',
        ]);
      }
    } finally {
      await client.close();
    }
  });

  test('a read-only credential sees the accounts but may not write to them', async () => {
    const res = await rawPost(stack.mcpUrl, callBody('ads_list_accounts'), bearer(tokens.readOnly as string));
    assert.equal(res.status, 200);
    const accounts = (
      sseData(res.text) as { result: { structuredContent: { accounts: { can_write: boolean }[] } } }
    ).result.structuredContent.accounts;
    assert.equal(accounts.length, 2);
    assert.ok(accounts.every((a) => a.can_write === false));
  });

  test("another workspace never sees this workspace's accounts", async () => {
    const res = await rawPost(stack.mcpUrl, callBody('ads_list_accounts'), bearer(tokens.other as string));
    assert.equal(res.status, 200);
    const data = sseData(res.text) as { result: { structuredContent: { accounts: unknown[] } } };
    assert.deepEqual(data.result.structuredContent.accounts, []);
  });
});

describe('HTTP status rules', () => {
  test('401 without a token, with a challenge naming the protected-resource metadata', async () => {
    const res = await rawPost(stack.mcpUrl, callBody('ads_get_connection_context'));
    assert.equal(res.status, 401);
    const challenge = res.headers.get('www-authenticate') ?? '';
    assert.match(challenge, /^Bearer /);
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
    assert.equal(metadataUrl, `${stack.gatewayUrl}/.well-known/oauth-protected-resource`);
    const metadata = (await (await fetch(metadataUrl as string)).json()) as {
      resource: string;
      scopes_supported: string[];
    };
    assert.equal(metadata.resource, stack.mcpUrl);
    assert.deepEqual(metadata.scopes_supported, ['read', 'write']);
  });

  for (const [what, header] of [
    ['a malformed header', 'Basic dXNlcjpwYXNz'],
    ['an unknown token', `Bearer amcp_${'A'.repeat(43)}`],
    ['a token of the wrong shape', 'Bearer not-a-token'],
  ] as const) {
    test(`401 for ${what}`, async () => {
      const res = await rawPost(stack.mcpUrl, callBody('ads_get_connection_context'), {
        authorization: header,
      });
      assert.equal(res.status, 401);
      assert.match(res.headers.get('www-authenticate') ?? '', /error="invalid_(request|token)"/);
    });
  }

  test('401 for an expired token and for a revoked one', async () => {
    const expired = await rawPost(
      stack.mcpUrl,
      callBody('ads_get_connection_context'),
      bearer(tokens.expired as string),
    );
    assert.equal(expired.status, 401);
    assert.match(expired.text, /expired/);
    const revoked = await rawPost(
      stack.mcpUrl,
      callBody('ads_get_connection_context'),
      bearer(tokens.revoked as string),
    );
    assert.equal(revoked.status, 401);
    assert.match(revoked.text, /revoked/);
  });

  test('406 when Accept lacks text/event-stream or application/json', async () => {
    for (const accept of [
      'application/json',
      'text/event-stream',
      '*/*',
      // A quality of 0 says the type is not acceptable.
      'application/json;q=0, text/event-stream',
      'application/json, text/event-stream; q=0.0',
    ]) {
      const res = await rawPost(stack.mcpUrl, callBody('ads_get_connection_context'), {
        ...bearer(seed.token),
        accept,
      });
      assert.equal(res.status, 406, accept);
    }
  });

  test('Accept names its media types in any case, with qualities and spaces', async () => {
    const list = { jsonrpc: '2.0', id: 3, method: 'tools/list', params: {} };
    for (const accept of [
      'Application/JSON , TEXT/EVENT-STREAM',
      'text/event-stream;q=0.5, application/json;q=1',
    ]) {
      for (const body of [callBody('ads_get_connection_context'), list]) {
        const res = await rawPost(stack.mcpUrl, body, { ...bearer(seed.token), accept });
        assert.equal(res.status, 200, `${accept}: ${res.text.slice(0, 300)}`);
      }
    }
  });

  test('bad params of initialize, ping or tools/list are a 400 naming the field, not an internal error', async () => {
    const cases: [object, RegExp][] = [
      [
        { jsonrpc: '2.0', id: 4, method: 'tools/list', params: { cursor: 123 } },
        /^Invalid params for tools\/list: `params\.cursor`: expected string, received number$/,
      ],
      [
        { jsonrpc: '2.0', id: 4, method: 'initialize' },
        /^Invalid params for initialize: `params`: expected object/,
      ],
      [
        { jsonrpc: '2.0', id: 4, method: 'ping', params: 5 },
        /^Invalid params for ping: `params`: expected object/,
      ],
    ];
    for (const [body, message] of cases) {
      const res = await rawPost(stack.mcpUrl, body, bearer(seed.token));
      assert.equal(res.status, 400, res.text);
      const answer = res.json as { id: number; error?: { code: number; message: string } };
      assert.equal(answer.id, 4);
      assert.equal(answer.error?.code, -32602);
      assert.match(answer.error?.message ?? '', message);
    }
  });

  test('403 when the credential lacks the scope or the role for the tool', async () => {
    // A write tool; ads_disconnect_client is the one write any credential may call (on itself).
    const write = callBody('ads_archive_marketing_item', {
      item_id: '0b0e4b6a-6a0e-4d8e-9c61-3c1f0f7b8a11',
      expected_revision: 1,
    });
    const noScope = await rawPost(stack.mcpUrl, write, bearer(tokens.readOnly as string));
    assert.equal(noScope.status, 403);
    assert.match(noScope.text, /lacks the \\"write\\" scope/);
    const viewer = await rawPost(stack.mcpUrl, write, bearer(tokens.viewer as string));
    assert.equal(viewer.status, 403);
    assert.match(viewer.text, /role \\"viewer\\"/);
    // Reads stay open to both.
    const read = await rawPost(
      stack.mcpUrl,
      callBody('ads_get_connection_context'),
      bearer(tokens.viewer as string),
    );
    assert.equal(read.status, 200);
  });

  test('403 for a browser origin that is not allowed', async () => {
    const res = await rawPost(stack.mcpUrl, callBody('ads_get_connection_context'), {
      ...bearer(seed.token),
      origin: 'https://evil.example',
    });
    assert.equal(res.status, 403);
    const same = await rawPost(stack.mcpUrl, callBody('ads_get_connection_context'), {
      ...bearer(seed.token),
      origin: stack.gatewayUrl,
    });
    assert.equal(same.status, 200);
  });

  test('400 for malformed JSON, a body that is not JSON-RPC, and an unsupported protocol version', async () => {
    const badJson = await rawPost(stack.mcpUrl, '{"jsonrpc": "2.0", ', bearer(seed.token));
    assert.equal(badJson.status, 400);
    assert.equal((badJson.json as { error: { code: number } }).error.code, -32700);
    const notRpc = await rawPost(stack.mcpUrl, { hello: 'world' }, bearer(seed.token));
    assert.equal(notRpc.status, 400);
    const version = await rawPost(
      stack.mcpUrl,
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      {
        ...bearer(seed.token),
        'mcp-protocol-version': '1999-01-01',
      },
    );
    assert.equal(version.status, 400);
    assert.match(version.text, /Unsupported protocol version/);
  });

  test('202 with no body for a notification', async () => {
    const res = await rawPost(
      stack.mcpUrl,
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      bearer(seed.token),
    );
    assert.equal(res.status, 202);
    assert.equal(res.text, '');
  });

  test('405 with Allow: POST for GET, DELETE, PUT and PATCH; OPTIONS is told the same', async () => {
    for (const method of ['GET', 'DELETE', 'PUT', 'PATCH']) {
      const res = await fetch(stack.mcpUrl, { method, headers: bearer(seed.token) });
      assert.equal(res.status, 405, method);
      assert.equal(res.headers.get('allow'), 'POST');
    }
    // OPTIONS asks what the endpoint takes: it is told, without a credential.
    const options = await fetch(stack.mcpUrl, { method: 'OPTIONS' });
    assert.equal(options.status, 204);
    assert.equal(options.headers.get('allow'), 'POST');
    assert.equal(options.headers.get('access-control-allow-origin'), null, 'no cross-origin access');
  });

  test('413 for a body over the limit, refused from its declared length before it is read', async () => {
    // Only the headers are sent: a server that streams a large body in while refusing it races the
    // client's writes, so the refusal is asked for by the declared length alone.
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(stack.mcpUrl, {
        method: 'POST',
        headers: {
          ...bearer(seed.token),
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'content-length': String(17 * 1024 * 1024),
        },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on('error', reject);
      req.flushHeaders();
    });
    assert.equal(status, 413);
  });

  test('a body as large as the documented limits allow is read: a workbook of 1000 ads with 2048-character URLs', async () => {
    const url = (c: string) => `https://shop.example.com/${c.repeat(2048 - 25)}`;
    const sheets = {
      campaigns: [
        { name: 'Large', objective: 'clicks', budget_type: 'daily', budget_amount: 10, status: 'paused' },
      ],
      adgroups: [{ campaign: 'Large', name: 'Large group', bid_micros: 500000, billing_event_type: 'click' }],
      ads: Array.from({ length: 1000 }, (_, i) => ({
        ad_group: 'Large group',
        name: `Ad ${i}`,
        title: `Title ${i}`,
        body: 'b'.repeat(100),
        target_url: url('t'),
        image_url: url('i'),
      })),
    };
    const body = callBody('ads_plan_workbook', { account_id: seed.accounts[0]?.account_id, sheets });
    assert.ok(JSON.stringify(body).length > 4 * 1024 * 1024, 'beyond the old 4 MiB limit');
    const res = await rawPost(stack.mcpUrl, body, bearer(seed.token));
    assert.equal(res.status, 200, res.text.slice(0, 300));
    const answer = sseData(res.text) as { result?: { isError?: boolean; structuredContent?: unknown } };
    assert.ok(answer.result?.structuredContent, 'a tool result, whatever the rows say');
  });

  test('429 with Retry-After when a credential exceeds its request rate', async () => {
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 130 && retryAfter === null; i++) {
      const res = await rawPost(
        oneGateway(),
        callBody('ads_get_connection_context'),
        bearer(tokens.rate as string),
      );
      statuses.push(res.status);
      if (res.status === 429) retryAfter = res.headers.get('retry-after');
    }
    assert.ok(statuses.includes(200));
    assert.ok(statuses.includes(429), 'no request was rate limited');
    assert.ok(Number(retryAfter) >= 1, `Retry-After was ${retryAfter}`);
    // Other credentials keep their own budget.
    const other = await rawPost(oneGateway(), callBody('ads_get_connection_context'), bearer(seed.token));
    assert.equal(other.status, 200);
  });

  test('an address that keeps failing authentication gets 429 for its failures, but a valid credential from it is served', async () => {
    const flood = { 'x-forwarded-for': '203.0.113.7' };
    // The valid client has been seen before, from anywhere.
    const seen = await rawPost(oneGateway(), callBody('ads_get_connection_context'), {
      'x-forwarded-for': '198.51.100.20',
      ...bearer(seed.token),
    });
    assert.equal(seen.status, 200);
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) {
      const res = await rawPost(oneGateway(), callBody('ads_get_connection_context'), {
        ...flood,
        authorization: `Bearer amcp_${'B'.repeat(43)}`,
      });
      statuses.push(res.status);
      if (res.status === 429) {
        assert.ok(Number(res.headers.get('retry-after')) >= 1);
        assert.match(res.text, /too many failed authentications/);
      }
    }
    assert.deepEqual(statuses, [...Array(20).fill(401), 429]);
    // The address is over its budget: guesses are refused, the valid credential is served.
    const valid = await rawPost(oneGateway(), callBody('ads_get_connection_context'), {
      ...flood,
      ...bearer(seed.token),
    });
    assert.equal(valid.status, 200, 'a valid credential is not refused for the failures of others');
    const other = await rawPost(oneGateway(), callBody('ads_get_connection_context'), {
      'x-forwarded-for': '198.51.100.9',
      ...bearer(tokens.readOnly as string),
    });
    assert.equal(other.status, 200);
    // Successes spend none of the budget: many valid calls from a fresh address, then still 20 failures.
    const office = { 'x-forwarded-for': '203.0.113.8' };
    for (let i = 0; i < 25; i++) {
      const ok = await rawPost(oneGateway(), callBody('ads_get_connection_context'), {
        ...office,
        ...bearer(seed.token),
      });
      assert.equal(ok.status, 200);
    }
    const failures = await rawPost(oneGateway(), callBody('ads_get_connection_context'), {
      ...office,
      authorization: `Bearer amcp_${'C'.repeat(43)}`,
    });
    assert.equal(failures.status, 401, 'the successes left the failure budget untouched');
  });

  test('WWW-Authenticate parameter values are valid quoted strings, with " and \\ escaped', async () => {
    for (const authorization of [undefined, 'Basic dXNlcjpwYXNz', 'Bearer not-a-token']) {
      const res = await rawPost(
        stack.mcpUrl,
        callBody('ads_get_connection_context'),
        authorization === undefined ? {} : { authorization },
      );
      assert.equal(res.status, 401);
      const challenge = res.headers.get('www-authenticate') ?? '';
      // RFC 9110: auth-param = token "=" ( token / quoted-string ), separated by commas.
      const param = /([A-Za-z_]+)=("(?:[^"\\]|\\.)*"|[^\s,"]+)/y;
      assert.ok(challenge.startsWith('Bearer '), challenge);
      const params: Record<string, string> = {};
      let at = 'Bearer '.length;
      for (;;) {
        param.lastIndex = at;
        const m = param.exec(challenge);
        assert.ok(m, `not a valid auth-param at ${at}: ${challenge}`);
        const value = m[2] as string;
        params[m[1] as string] = value.startsWith('"') ? value.slice(1, -1).replace(/\\(.)/g, '$1') : value;
        at = param.lastIndex;
        if (at === challenge.length) break;
        assert.equal(challenge.slice(at, at + 2), ', ', `expected ", " at ${at}: ${challenge}`);
        at += 2;
      }
      assert.equal(params.resource_metadata, `${stack.gatewayUrl}/.well-known/oauth-protected-resource`);
      if (authorization?.startsWith('Basic')) {
        assert.equal(params.error, 'invalid_request');
        assert.equal(params.error_description, 'the Authorization header must be "Bearer <token>"');
      }
    }
  });

  test('an unknown tool is a JSON-RPC error, not a crash', async () => {
    const res = await rawPost(stack.mcpUrl, callBody('ads_no_such_tool'), bearer(seed.token));
    assert.equal(res.status, 200);
    const msg = sseData(res.text) as { error?: { code: number; message: string } };
    assert.equal(msg.error?.code, -32602);
    assert.match(msg.error?.message ?? '', /unknown tool: ads_no_such_tool/);
  });
});

describe('protocol versions and batches', () => {
  const batchOf = (n: number, name = 'ads_get_connection_context') =>
    Array.from({ length: n }, (_, i) => ({ ...callBody(name), id: i + 1 }));

  for (const [named, header] of [
    ['1999-01-01', '1999-01-01'],
    ['an empty header', ''],
  ] as const) {
    test(`the unsupported-version error for ${named} lists every supported version, 2026-07-28 included`, async () => {
      const res = await rawPost(
        stack.mcpUrl,
        { jsonrpc: '2.0', id: 1, method: 'tools/list' },
        { ...bearer(seed.token), 'mcp-protocol-version': header },
      );
      assert.equal(res.status, 400);
      const error = (res.json as { error: { code: number; message: string } }).error;
      const unsupported = (
        (await rawPost(
          stack.mcpUrl,
          { jsonrpc: '2.0', id: 1, method: 'tools/list' },
          { ...bearer(seed.token), 'mcp-protocol-version': '1999-01-01' },
        )) as { json?: unknown }
      ).json as { error: { code: number } };
      assert.equal(error.code, unsupported.error.code, 'the same error whatever the version named');
      for (const v of ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']) {
        assert.ok(error.message.includes(v), `${v} is missing from: ${error.message}`);
      }
      if (header === '') assert.match(error.message, /the MCP-Protocol-Version header is empty/);
    });
  }

  for (const version of ['2025-06-18', '2025-11-25', '2026-07-28']) {
    test(`a batch under ${version} is refused with 400 and a JSON-RPC error: batches were removed in 2025-06-18`, async () => {
      const res = await rawPost(stack.mcpUrl, batchOf(2), {
        ...bearer(seed.token),
        'mcp-protocol-version': version,
      });
      assert.equal(res.status, 400);
      const error = (res.json as { jsonrpc: string; error: { code: number; message: string } }).error;
      assert.equal(error.code, -32600);
      assert.match(error.message, new RegExp(`batches are not allowed in protocol version ${version}`));
    });
  }

  test('under 2025-03-26 a batch is served, and every tools/call in it counts against the credential rate', async () => {
    // Burst 100 at 5/s: two batches of 50 calls empty the bucket, the third is refused.
    const statuses: number[] = [];
    let refused: Awaited<ReturnType<typeof rawPost>> | undefined;
    for (let i = 0; i < 3; i++) {
      const res = await rawPost(oneGateway(), batchOf(50), {
        ...bearer(tokens.batchRate as string),
        'mcp-protocol-version': '2025-03-26',
      });
      statuses.push(res.status);
      if (res.status === 200) {
        const answers = sseMessages(res.text);
        assert.equal(answers.length, 50, 'one answer per request of the batch');
        assert.ok(answers.every((a) => a.result !== undefined));
      } else {
        refused = res;
      }
    }
    assert.deepEqual(statuses, [200, 200, 429]);
    assert.ok(Number(refused?.headers.get('retry-after')) >= 1);
    // Refused by the request's own count when the bucket is empty, else by the batch's further calls.
    assert.match(
      refused?.text ?? '',
      /rate limited( \(each of the batch's 50 tool calls counts\))?: retry after/,
    );
  });

  test("each message of a batch gets its own request id in the gateway's and the services' logs", async () => {
    const requestId = `e2e-batch-${Date.now()}`;
    const res = await rawPost(
      stack.mcpUrl,
      [
        { jsonrpc: '2.0', id: 'list', method: 'tools/list' },
        { ...callBody('ads_list_accounts'), id: 'first' },
        { ...callBody('ads_list_accounts'), id: 'second' },
      ],
      { ...bearer(seed.token), 'x-request-id': requestId },
    );
    assert.equal(res.status, 200);
    assert.equal(sseMessages(res.text).length, 3);
    await new Promise((r) => setTimeout(r, 300)); // let the log lines arrive
    for (const position of [1, 2, 3]) {
      const own = `"request_id":"${requestId}.${position}"`;
      assert.ok(
        stack
          .recentOutput('gateway')
          .some((l) => l.includes(own) && l.includes(`"batch_request_id":"${requestId}"`)),
        `the gateway logged no line for message ${position}`,
      );
    }
    for (const position of [2, 3]) {
      assert.ok(
        stack
          .recentOutput('upstream-proxy')
          .some((l) => l.includes(`"request_id":"${requestId}.${position}"`) && l.includes('ListAccounts')),
        `upstream-proxy did not log call ${position} with its own request id`,
      );
    }
  });
});

describe('hostile bodies', () => {
  test('a body nested 5,000 levels is a 400 naming the depth limit of 64, and the gateway keeps serving', async () => {
    const deepArrays = `${'['.repeat(5000)}${']'.repeat(5000)}`;
    const deepArguments = JSON.stringify(callBody('ads_get_connection_context')).replace(
      '"arguments":{}',
      `"arguments":{"a":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}`,
    );
    for (const body of [deepArrays, deepArguments]) {
      const res = await rawPost(stack.mcpUrl, body, bearer(seed.token));
      assert.equal(res.status, 400);
      assert.equal(res.headers.get('retry-after'), null);
      const error = (res.json as { error: { code: number; message: string } }).error;
      assert.equal(error.code, -32600);
      assert.match(error.message, /deeper than the limit of 64 levels/);
    }
    const fine = await rawPost(stack.mcpUrl, callBody('ads_get_connection_context'), bearer(seed.token));
    assert.equal(fine.status, 200);
  });

  // With and without the version header: a client that has initialized sends it, and the common
  // exchange's short path must not take a malformed call for a well-formed one.
  for (const version of [undefined, '2025-06-18', '2025-03-26']) {
    const headers = () => ({ ...bearer(seed.token), ...(version && { 'mcp-protocol-version': version }) });
    const era = version ? `with version ${version}` : 'without a version header';
    for (const [what, args] of [
      ['a string', 'x'],
      ['a number', 5],
      ['an array', []],
      ['null', null],
    ] as const) {
      test(`\`arguments\` that is ${what} is a 400 naming \`arguments\` (${era})`, async () => {
        const res = await rawPost(
          stack.mcpUrl,
          {
            jsonrpc: '2.0',
            id: 7,
            method: 'tools/call',
            params: { name: 'ads_get_connection_context', arguments: args },
          },
          headers(),
        );
        assert.equal(res.status, 400, 'bad parameters are a bad request');
        const answer = res.json as { id: number; error?: { code: number; message: string } };
        assert.equal(answer.id, 7);
        assert.equal(answer.error?.code, -32602);
        assert.equal(
          answer.error?.message,
          `Invalid params: \`arguments\` must be an object holding the tool's arguments (got ${what})`,
        );
      });
    }
    test(`a missing or non-string \`name\` is a 400 naming \`name\` (${era})`, async () => {
      for (const [params, message] of [
        [{ arguments: {} }, 'Invalid params: `name` is required: the name of the tool to call'],
        [{ name: 5, arguments: {} }, 'Invalid params: `name` must be a string naming a tool (got a number)'],
      ] as const) {
        const res = await rawPost(
          stack.mcpUrl,
          { jsonrpc: '2.0', id: 'n', method: 'tools/call', params },
          headers(),
        );
        assert.equal(res.status, 400);
        assert.deepEqual(res.json, {
          jsonrpc: '2.0',
          id: 'n',
          error: { code: -32602, message },
        });
      }
    });
  }
  test('in a batch, a malformed call or request is answered in its place and the others run', async () => {
    const res = await rawPost(
      stack.mcpUrl,
      [
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'ads_get_connection_context', arguments: null },
        },
        {
          jsonrpc: '2.0',
          id: 2,
          method: 'tools/call',
          params: { name: 'ads_get_connection_context', arguments: {} },
        },
        { jsonrpc: '2.0', id: 3, method: 'tools/list', params: { cursor: 5 } },
        { jsonrpc: '2.0', id: 4, method: 'ping', params: 'now' },
        { jsonrpc: '2.0', id: 5, method: 'tools/list', params: {} },
      ],
      { ...bearer(seed.token), 'mcp-protocol-version': '2025-03-26' },
    );
    assert.equal(res.status, 200);
    const answers = sseMessages(res.text) as {
      id: number;
      error?: { code: number; message: string };
      result?: { tools?: unknown[] };
    }[];
    const byId = new Map(answers.map((a) => [a.id, a]));
    assert.equal(answers.length, 5);
    assert.match(byId.get(1)?.error?.message ?? '', /`arguments` must be an object/);
    assert.ok(byId.get(2)?.result, 'the well-formed call ran');
    // Bad params of another method are answered in their place too, naming the field, not as an
    // internal error.
    assert.deepEqual(byId.get(3)?.error, {
      code: -32602,
      message: 'Invalid params for tools/list: `params.cursor`: expected string, received number',
    });
    assert.equal(byId.get(4)?.error?.code, -32602);
    assert.match(byId.get(4)?.error?.message ?? '', /^Invalid params for ping: /);
    assert.ok((byId.get(5)?.result?.tools?.length ?? 0) > 0, 'the well-formed list ran');
  });
});

describe('loopback origins', () => {
  test('localhost, 127.0.0.1 and [::1] with the same port are the same origin for /mcp; another port or scheme is not', async () => {
    const port = new URL(stack.gatewayUrl).port;
    for (const origin of [`http://localhost:${port}`, `http://127.0.0.1:${port}`, `http://[::1]:${port}`]) {
      const res = await rawPost(stack.mcpUrl, callBody('ads_get_connection_context'), {
        ...bearer(seed.token),
        origin,
      });
      assert.equal(res.status, 200, origin);
    }
    for (const origin of [`http://localhost:${Number(port) + 1}`, `https://localhost:${port}`, 'null']) {
      const res = await rawPost(stack.mcpUrl, callBody('ads_get_connection_context'), {
        ...bearer(seed.token),
        origin,
      });
      assert.equal(res.status, 403, origin);
    }
  });
});

describe('slow clients', () => {
  test('a request body that trickles in is cut off with 408 after REQUEST_TIMEOUT_SECONDS', async () => {
    const { hostname, port } = new URL(stack.gatewayUrl);
    const started = Date.now();
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), hostname);
      let trickle: NodeJS.Timeout | undefined;
      const giveUp = setTimeout(() => {
        socket.destroy();
        resolve('no answer in 20 s');
      }, 20_000);
      socket.on('connect', () => {
        socket.write(
          'POST /mcp HTTP/1.1\r\n' +
            `Host: ${hostname}:${port}\r\n` +
            `Authorization: Bearer ${seed.token}\r\n` +
            'Content-Type: application/json\r\n' +
            'Accept: application/json, text/event-stream\r\n' +
            'Content-Length: 1000\r\n\r\n',
        );
        // One byte every 200 ms: the body would take 200 s to arrive.
        trickle = setInterval(() => socket.write(' '), 200);
      });
      socket.on('data', (d: Buffer) => {
        clearTimeout(giveUp);
        resolve(d.toString('utf8'));
        socket.destroy();
      });
      socket.on('close', () => clearInterval(trickle));
      socket.on('error', (err) => {
        clearTimeout(giveUp);
        reject(err);
      });
    });
    const elapsed = Date.now() - started;
    assert.match(answer, /^HTTP\/1\.1 408 /);
    assert.ok(elapsed >= 2500 && elapsed < 15_000, `cut off after ${elapsed} ms`);
  });
});

describe('ads_disconnect_client', () => {
  test('revokes only the credential used for the request', async () => {
    const client = await connectClient('v1', stack.mcpUrl, tokens.disconnect as string);
    try {
      const res = await client.callTool('ads_disconnect_client');
      assert.notEqual(res.isError, true);
      const data = res.structuredContent as { revoked: boolean; advertising_paused: boolean };
      assert.equal(data.revoked, true);
      assert.equal(data.advertising_paused, false);
    } finally {
      await client.close();
    }
    const after = await rawPost(
      stack.mcpUrl,
      callBody('ads_get_connection_context'),
      bearer(tokens.disconnect as string),
    );
    assert.equal(after.status, 401);
    const others = await rawPost(stack.mcpUrl, callBody('ads_get_connection_context'), bearer(seed.token));
    assert.equal(others.status, 200);
  });

  test('called three times at once, every call answers the one stored revocation, audited once', async () => {
    const { token, credential_id: credentialId } = await createToken(['--name', 'disconnect thrice']);
    const answers = await Promise.all(
      [1, 2, 3].map(() => rawPost(stack.mcpUrl, callBody('ads_disconnect_client'), bearer(token))),
    );
    // A call that arrived after the first revocation committed is refused at the door (401).
    const results = answers
      .filter((a) => a.status === 200)
      .map((a) => (sseData(a.text) as { result: { structuredContent: { revoked_at: string } } }).result);
    assert.ok(results.length >= 1);
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      const stored = await c.query<{ revoked_at: Date }>(
        'SELECT revoked_at FROM gateway.credentials WHERE id = $1',
        [credentialId],
      );
      const at = stored.rows[0]?.revoked_at.toISOString();
      for (const r of results) assert.equal(r.structuredContent.revoked_at, at);
      const audited = await c.query(
        "SELECT 1 FROM gateway.audit_log WHERE action = 'credential.revoked' AND target = $1",
        [credentialId],
      );
      assert.equal(audited.rowCount, 1);
    } finally {
      await c.end();
    }
  });
});

describe('catalogue', () => {
  test('GET /catalogue.json lists every tool with schema, annotations, group, behaviour and features', async () => {
    const res = await fetch(`${stack.gatewayUrl}/catalogue.json`);
    assert.equal(res.status, 200);
    const doc = (await res.json()) as {
      server: { version: string };
      tools: {
        name: string;
        group: string;
        behavior: string;
        required_features: string[];
        inputSchema: { type: string; additionalProperties: boolean };
        annotations: object;
      }[];
    };
    assert.equal(doc.server.version, '1.0.0');
    assert.ok(doc.tools.length >= 3);
    for (const t of doc.tools) {
      assert.match(t.name, /^ads_[a-z_]+$/);
      assert.ok(['Read', 'Write', 'Prepare change'].includes(t.behavior), t.behavior);
      assert.ok(t.group.length > 0);
      assert.ok(Array.isArray(t.required_features));
      assert.equal(t.inputSchema.type, 'object');
      assert.equal(t.inputSchema.additionalProperties, false);
      assert.ok(t.annotations);
    }
  });
});

describe('observability and lifecycle', () => {
  test("the caller's request id follows the call from the gateway into the service it calls", async () => {
    const requestId = `e2e-trace-${Date.now()}`;
    const res = await rawPost(stack.mcpUrl, callBody('ads_list_accounts'), {
      ...bearer(seed.token),
      'x-request-id': requestId,
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-request-id'), requestId);
    await new Promise((r) => setTimeout(r, 200)); // let the log lines arrive
    const tagged = (service: 'gateway' | 'upstream-proxy') =>
      stack.recentOutput(service).filter((l) => l.includes(`"request_id":"${requestId}"`));
    assert.ok(tagged('gateway').length > 0, 'gateway logged nothing with the request id');
    assert.ok(
      tagged('upstream-proxy').some((l) => l.includes('UpstreamService/ListAccounts')),
      `upstream-proxy did not log the call with the request id:\n${stack.recentOutput('upstream-proxy').slice(-5).join('\n')}`,
    );
  });

  test('every process stops cleanly on SIGTERM', async () => {
    const codes = await stack.stop();
    assert.deepEqual(codes, {
      gateway: 0,
      changes: 0,
      optimizer: 0,
      marketing: 0,
      'upstream-proxy': 0,
      'ads-sandbox': 0,
    });
  });
});
