/**
 * Hostile input at the gateway's HTTP edge, end to end against the real processes: bodies that are
 * not UTF-8, compressed bodies, clients too slow or not speaking HTTP, and floods of bad
 * credentials. Each is refused with a JSON-RPC error of one shape, and nothing is stored.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { rawPost } from '@adsmcp/testkit/mcp-clients';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;

const REQUEST_TIMEOUT_SECONDS = 2;
const AUTH_FAILURES_PER_MINUTE = 20;

before(async () => {
  e2e = await startSeededStack({
    env: {
      AUTH_FAILURES_PER_MINUTE: String(AUTH_FAILURES_PER_MINUTE),
      TRUST_PROXY: 'true',
      REQUEST_TIMEOUT_SECONDS: String(REQUEST_TIMEOUT_SECONDS),
    },
  });
  ({ stack, seed } = e2e);
});

after(async () => {
  await e2e?.stop();
});

/**
 * One gateway replica, not the stack's round-robin front: the failure budget is kept per replica,
 * and the raw-socket tests must reach the gateway's own HTTP parser.
 */
const gatewayUrl = () => stack.replicaUrls.gateway[0] as string;
const oneGateway = () => `${gatewayUrl()}/mcp`;

const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
const callBody = (name: string, args: object = {}) => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name, arguments: args },
});

/** The structured result of a tools/call answered as SSE (or plain JSON). */
function toolResult<T>(text: string): T {
  const line = text.split('\n').find((l) => l.startsWith('data: '));
  const message = JSON.parse(line ? line.slice(6) : text) as {
    result?: { structuredContent?: T; isError?: boolean };
  };
  assert.equal(message.result?.isError, undefined, text);
  return message.result?.structuredContent as T;
}

/**
 * Asserts that `body` is exactly the edge's error shape, `{jsonrpc, error: {code, message}, id: null}`,
 * and returns its message.
 */
function edgeError(body: string, code: number): string {
  const parsed = JSON.parse(body) as {
    jsonrpc: string;
    error: { code: number; message: string };
    id: unknown;
  };
  assert.deepEqual(Object.keys(parsed).sort(), ['error', 'id', 'jsonrpc'], body);
  assert.equal(parsed.jsonrpc, '2.0');
  assert.equal(parsed.id, null);
  assert.deepEqual(Object.keys(parsed.error).sort(), ['code', 'message'], body);
  assert.equal(parsed.error.code, code, body);
  assert.equal(typeof parsed.error.message, 'string');
  return parsed.error.message;
}

/** A POST /mcp of raw bytes with the usual headers; `headers` add to or replace them. */
async function postBytes(
  body: Uint8Array,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; text: string }> {
  const res = await fetch(oneGateway(), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...bearer(seed.token),
      ...headers,
    },
    body,
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** How many live marketing items of `collection` the workspace holds. */
async function itemsIn(collection: string): Promise<number> {
  const res = await rawPost(
    oneGateway(),
    callBody('ads_list_marketing_items', { collection }),
    bearer(seed.token),
  );
  assert.equal(res.status, 200, res.text);
  return toolResult<{ total: number }>(res.text).total;
}

/** A request to save a playbook in `collection` whose guidance is `guidance`, as UTF-8 JSON. */
const savePlaybook = (collection: string, guidance: string) =>
  callBody('ads_save_marketing_item', {
    kind: 'playbook',
    name: `Playbook in ${collection}`,
    collection,
    data: { guidance, evidence: 'hypothesis' },
  });

/**
 * Sends `parts` on a raw connection to the gateway, one every `everyMs`, and returns what it
 * answers until it closes the connection (or `giveUpMs` passes), split into status, headers and body.
 */
function rawExchange(
  parts: (string | Buffer)[],
  opts: { everyMs?: number; giveUpMs?: number; keepSending?: boolean } = {},
): Promise<{ status: number; head: string; body: string; elapsedMs: number }> {
  const { hostname, port } = new URL(gatewayUrl());
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    let timer: NodeJS.Timeout | undefined;
    const giveUp = setTimeout(() => socket.destroy(), opts.giveUpMs ?? 20_000);
    socket.on('connect', () => {
      let next = 0;
      const send = () => {
        if (socket.destroyed) return;
        const part = parts[next];
        if (part !== undefined) {
          socket.write(part);
          next += 1;
        } else if (opts.keepSending) {
          socket.write(' ');
        } else {
          return;
        }
        if (opts.everyMs !== undefined) timer = setTimeout(send, opts.everyMs);
        else send();
      };
      send();
    });
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      clearTimeout(timer);
      clearTimeout(giveUp);
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const head = split === -1 ? text : text.slice(0, split);
      const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(head)?.[1] ?? 0);
      if (status === 0) reject(new Error(`no HTTP answer: ${JSON.stringify(text.slice(0, 200))}`));
      else
        resolve({
          status,
          head,
          body: split === -1 ? '' : text.slice(split + 4),
          elapsedMs: Date.now() - started,
        });
    });
  });
}

const requestHead = (extra = '') =>
  'POST /mcp HTTP/1.1\r\n' +
  `Host: ${new URL(gatewayUrl()).host}\r\n` +
  `Authorization: Bearer ${seed.token}\r\n` +
  'Content-Type: application/json\r\n' +
  'Accept: application/json, text/event-stream\r\n' +
  extra;

describe('bodies that are not UTF-8', () => {
  test('a body with a byte that is not UTF-8 is a 400 parse error naming its byte offset, and nothing is saved', async () => {
    const collection = `Latin-1 ${randomBytes(4).toString('hex')}`;
    const utf8 = Buffer.from(JSON.stringify(savePlaybook(collection, 'Caf\u00e9 culture first')), 'utf8');
    // The same text with its é as the single Latin-1 byte E9, which no UTF-8 sequence starts with.
    const at = utf8.indexOf(Buffer.from('\u00e9', 'utf8'));
    const latin1 = Buffer.concat([utf8.subarray(0, at), Buffer.from([0xe9]), utf8.subarray(at + 2)]);
    const res = await postBytes(latin1);
    assert.equal(res.status, 400);
    assert.equal(
      edgeError(res.text, -32700),
      `Parse error: the body is not valid UTF-8 (the first invalid byte sequence starts at byte offset ${at}); JSON must be sent as UTF-8`,
    );
    assert.equal(await itemsIn(collection), 0, 'no item holding U+FFFD was saved');

    // The same item sent as UTF-8 is saved with its text exactly, and so is a U+FFFD the client meant.
    const ok = await postBytes(utf8);
    assert.equal(ok.status, 200, ok.text);
    const meant = await postBytes(
      Buffer.from(JSON.stringify(savePlaybook(collection, 'Replacement \uFFFD sign')), 'utf8'),
    );
    assert.equal(meant.status, 200, meant.text);
    assert.equal(
      toolResult<{ item: { data: { guidance: string } } }>(meant.text).item.data.guidance,
      'Replacement \uFFFD sign',
    );
    assert.equal(await itemsIn(collection), 2);
  });

  test('a truncated multi-byte sequence at the very end is refused, not decoded as U+FFFD', async () => {
    const text = JSON.stringify(callBody('ads_get_connection_context'));
    const cut = Buffer.concat([Buffer.from(text.slice(0, -1), 'utf8'), Buffer.from([0xe2, 0x82])]);
    const res = await postBytes(cut);
    assert.equal(res.status, 400);
    assert.match(edgeError(res.text, -32700), new RegExp(`at byte offset ${text.length - 1}\\)`));
  });
});

describe('compressed bodies', () => {
  test('a body with a Content-Encoding other than identity is a 415 naming the header and what is accepted, and nothing is saved', async () => {
    const collection = `Compressed ${randomBytes(4).toString('hex')}`;
    const json = Buffer.from(JSON.stringify(savePlaybook(collection, 'Compressed guidance')), 'utf8');
    for (const [encoding, body] of [
      ['gzip', gzipSync(json)],
      ['x-gzip', gzipSync(json)],
      ['GZIP', gzipSync(json)],
      ['br', brotliCompressSync(json)],
      ['deflate', deflateSync(json)],
      ['compress', json],
      ['identity, gzip', gzipSync(json)],
    ] as const) {
      const res = await postBytes(body, { 'content-encoding': encoding });
      assert.equal(res.status, 415, `${encoding}: ${res.text}`);
      assert.equal(res.headers.get('accept-encoding'), 'identity');
      const message = edgeError(res.text, -32600);
      assert.match(message, /^Unsupported Media Type: Content-Encoding "[^"]+" is not accepted/, encoding);
      assert.match(message, /no Content-Encoding header or Content-Encoding: identity/);
    }
    assert.equal(await itemsIn(collection), 0);
    // identity, in any case, is the body as it is.
    for (const encoding of ['identity', 'IDENTITY']) {
      const res = await postBytes(Buffer.from(JSON.stringify(callBody('ads_get_connection_context'))), {
        'content-encoding': encoding,
      });
      assert.equal(res.status, 200, `${encoding}: ${res.text}`);
    }
  });
});

describe('every edge error has the JSON-RPC shape', () => {
  test('a request whose headers never finish arriving gets 408 with a JSON-RPC error body', async () => {
    const head = requestHead().split('');
    // One character every 100 ms: the headers alone would take longer than the time allowed.
    const res = await rawExchange(head, { everyMs: 100 });
    assert.equal(res.status, 408, res.head);
    assert.match(res.head, /content-type: application\/json/i);
    assert.match(edgeError(res.body, -32600), /^Request Timeout: .* within 2 s$/);
    assert.ok(res.elapsedMs >= REQUEST_TIMEOUT_SECONDS * 1000 - 500, `after ${res.elapsedMs} ms`);
  });

  test('a body that trickles in gets 408 with a JSON-RPC error body', async () => {
    const res = await rawExchange([`${requestHead('Content-Length: 1000\r\n')}\r\n`], {
      everyMs: 200,
      keepSending: true,
    });
    assert.equal(res.status, 408, res.head);
    assert.match(edgeError(res.body, -32600), /^Request Timeout: /);
  });

  test('headers over the limit get 431, bytes that are not HTTP 400, an Expect other than 100-continue 417', async () => {
    const huge = await rawExchange([`${requestHead(`X-Padding: ${'a'.repeat(20_000)}\r\n`)}\r\n`]);
    assert.equal(huge.status, 431, huge.head);
    assert.match(edgeError(huge.body, -32600), /^Request Header Fields Too Large: /);

    const garbage = await rawExchange(['\x16\x03\x01 hello, not HTTP\r\n\r\n']);
    assert.equal(garbage.status, 400, garbage.head);
    assert.match(edgeError(garbage.body, -32600), /^Bad Request: the request is not valid HTTP\/1\.1/);

    const expect = await rawExchange([`${requestHead('Expect: 200-ok\r\nContent-Length: 2\r\n')}\r\n{}`]);
    assert.equal(expect.status, 417, expect.head);
    assert.match(edgeError(expect.body, -32600), /^Expectation Failed: Expect: 200-ok is not supported/);
  });

  test('an unknown path, a chunked body over the limit and a body that is not JSON by its type are JSON-RPC errors', async () => {
    const missing = await fetch(`${gatewayUrl()}/no-such-route`, { method: 'POST' });
    assert.equal(missing.status, 404);
    assert.match(edgeError(await missing.text(), -32600), /^Not Found: no route for POST \/no-such-route/);

    // A path that cannot be percent-decoded.
    const badUrl = await rawExchange([
      `GET /oauth/%zz HTTP/1.1\r\nHost: ${new URL(gatewayUrl()).host}\r\nConnection: close\r\n\r\n`,
    ]);
    assert.equal(badUrl.status, 400, badUrl.head);
    assert.match(edgeError(badUrl.body, -32600), /^Bad Request: .*not a valid url component/);

    // No Content-Length: the limit is found while reading (16 MiB by default).
    const chunk = `${Buffer.alloc(1024 * 1024, ' ').toString()}`;
    const parts = [`${requestHead('Transfer-Encoding: chunked\r\n')}\r\n`];
    for (let i = 0; i < 18; i++) parts.push(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
    const tooLarge = await rawExchange(parts);
    assert.equal(tooLarge.status, 413, tooLarge.head);
    assert.match(edgeError(tooLarge.body, -32600), /^Payload Too Large: the body exceeds \d+ bytes$/);

    // Refused by the MCP SDK, with its own code, in the same shape.
    const wrongType = await postBytes(Buffer.from('{}'), { 'content-type': 'text/plain' });
    assert.equal(wrongType.status, 415);
    assert.match(edgeError(wrongType.text, -32000), /Content-Type must be application\/json/);
  });
});

describe('the failed-authentication budget', () => {
  const badHeaders = [
    'Basic dXNlcjpwYXNz',
    'Bearer not-a-token',
    'Bearer',
    `Bearer amcp_${'B'.repeat(43)}`,
    `Bearer ${randomBytes(32).toString('base64url')}`,
  ];

  test('every failed credential counts, whatever its shape; a request with none does not', async () => {
    const address = { 'x-forwarded-for': '203.0.113.21' };
    for (let i = 0; i < 30; i++) {
      const res = await rawPost(oneGateway(), callBody('ads_get_connection_context'), address);
      assert.equal(res.status, 401, 'asking without a credential is not a failure');
    }
    const statuses: number[] = [];
    for (let i = 0; i <= AUTH_FAILURES_PER_MINUTE; i++) {
      const res = await rawPost(oneGateway(), callBody('ads_get_connection_context'), {
        ...address,
        authorization: badHeaders[i % badHeaders.length] as string,
      });
      statuses.push(res.status);
      if (res.status === 429) {
        assert.ok(Number(res.headers.get('retry-after')) >= 1);
        assert.match(edgeError(res.text, -32600), /too many failed authentications/);
      }
    }
    assert.deepEqual(statuses, [...Array(AUTH_FAILURES_PER_MINUTE).fill(401), 429]);
    // Over budget, a bad credential of any shape is a 429.
    for (const authorization of badHeaders) {
      const res = await rawPost(oneGateway(), callBody('ads_get_connection_context'), {
        ...address,
        authorization,
      });
      assert.equal(res.status, 429, authorization);
    }
  });

  test('a valid credential this gateway has never seen is served from an address over its budget, even amid a flood', async () => {
    const address = { 'x-forwarded-for': '203.0.113.22' };
    // Never sent to any gateway before it is sent from the address over its budget.
    const fresh = JSON.parse(
      await stack.admin(['create-token', '--workspace', seed.workspaceId, '--name', 'behind the flood']),
    ) as { token: string };
    for (let i = 0; i < AUTH_FAILURES_PER_MINUTE; i++) {
      await rawPost(oneGateway(), callBody('ads_get_connection_context'), {
        ...address,
        authorization: `Bearer amcp_${randomBytes(32).toString('base64url').slice(0, 43)}`,
      });
    }
    const over = await rawPost(oneGateway(), callBody('ads_get_connection_context'), {
      ...address,
      authorization: `Bearer amcp_${'C'.repeat(43)}`,
    });
    assert.equal(over.status, 429, 'the address is over its budget');

    const flood = Array.from({ length: 100 }, () =>
      rawPost(oneGateway(), callBody('ads_get_connection_context'), {
        ...address,
        authorization: `Bearer amcp_${randomBytes(32).toString('base64url').slice(0, 43)}`,
      }),
    );
    const valid = rawPost(oneGateway(), callBody('ads_get_connection_context'), {
      ...address,
      ...bearer(fresh.token),
    });
    const [validRes, ...floodRes] = await Promise.all([valid, ...flood]);
    assert.equal(validRes?.status, 200, validRes?.text);
    // Every guess is refused; a budget of 20 a minute refills one failure every 3 s, which a slow
    // run may give to one or two of them (a 401).
    const statuses = floodRes.map((r) => r.status);
    assert.deepEqual(
      statuses.filter((s) => s !== 429 && s !== 401),
      [],
    );
    assert.ok(
      statuses.filter((s) => s === 429).length >= 98,
      `${statuses.filter((s) => s === 401).length} were 401`,
    );
    // Once served, the credential goes on being served from that address, and guesses stay refused.
    const again = await rawPost(oneGateway(), callBody('ads_get_connection_context'), {
      ...address,
      ...bearer(fresh.token),
    });
    assert.equal(again.status, 200);
    const guess = await rawPost(oneGateway(), callBody('ads_get_connection_context'), {
      ...address,
      authorization: `Bearer amcp_${'D'.repeat(43)}`,
    });
    assert.equal(guess.status, 429);
  });
});
