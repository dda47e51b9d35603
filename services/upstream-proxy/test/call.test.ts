import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, afterEach, before, describe, it } from 'node:test';
import { setTimeout as pause } from 'node:timers/promises';
import { withRequestId } from '@adsmcp/runtime/log';
import type { Principal } from '@adsmcp/runtime/principal';
import { Code } from '@connectrpc/connect';
import { DEFAULT_MAX_IN_FLIGHT_PER_ACCOUNT } from '../src/upstream/in-flight-limit.ts';
import { DEFAULT_MAX_RESPONSE_BYTES } from '../src/upstream/platform-client.ts';
import { type Answer, type FakePlatform, json, startFakePlatform } from './fake-platform.ts';
import { as, type Harness, principal, type Replica, refused, startHarness } from './proxy-harness.ts';

interface CallInit {
  accountId: string;
  method: string;
  path: string;
  query?: { name: string; value: string }[];
  bodyJson?: string;
  idempotencyKey?: string;
  body?: Uint8Array;
  contentType?: string;
}

let harness: Harness;
let platform: FakePlatform;
/** A proxy with a generous budget and a 300 ms time-out per request. */
let proxy: Replica;
/** An admin with read and write scopes, and a connection of its workspace that allows writes. */
let admin: Principal;
let accountId: string;

before(async () => {
  harness = await startHarness();
  platform = await startFakePlatform();
  proxy = await harness.proxy({ platformUrl: platform.url, timeoutMs: 300 });
  admin = principal();
  accountId = await harness.connect(admin.workspaceId, { credential: 'sbx_the-credential' });
});

afterEach(() => {
  platform.seen.length = 0;
  platform.answer(json({}));
});

after(async () => {
  await harness?.stop();
  await platform?.close();
});

const get = (path: string, extra: Partial<CallInit> = {}): CallInit => ({
  accountId,
  method: 'GET',
  path,
  ...extra,
});
const post = (path: string, extra: Partial<CallInit> = {}): CallInit => ({
  accountId,
  method: 'POST',
  path,
  bodyJson: '{"status":"paused"}',
  idempotencyKey: `key-${randomUUID()}`,
  ...extra,
});

/** A file upload: `bytes` to POST /files as a PNG, with a new idempotency key. */
const upload = (bytes: Uint8Array, extra: Partial<CallInit> = {}): CallInit => ({
  accountId,
  method: 'POST',
  path: '/files',
  body: bytes,
  contentType: 'image/png',
  idempotencyKey: `upload-${randomUUID()}`,
  ...extra,
});

/** Bytes that stand for a file: the proxy carries them without looking inside. */
const FILE = randomBytes(4096);

describe('Call: what a request must be', () => {
  const cases: [string, CallInit, RegExp][] = [
    [
      'a method other than GET or POST',
      get('/ads', { method: 'PUT' }),
      /^`method` must be one of GET, POST \(got "PUT"\)/,
    ],
    ['a lower-case method', get('/ads', { method: 'get' }), /^`method` must be one of GET, POST/],
    ['a path without a leading slash', get('ads'), /^path must start with "\/"/],
    ['a full URL', get('https://evil.example/ads'), /^path must start with "\/".*never a URL/],
    ['a path naming a host', get('//evil.example/ads'), /^path must not name a host/],
    ['a ".." segment', get('/ads/../me'), /^path must not contain "\.\." or "\." segments/],
    [
      'a percent-encoded ".." segment',
      get('/ads/%2E%2e/me'),
      /^path must not contain "\.\." or "\." segments/,
    ],
    ['an encoded slash', get('/ads/a%2Fb'), /^path must not contain an encoded "\/"/],
    [
      'a query in the path',
      get('/ads?limit=5'),
      /^path must not contain "\?" or "#": pass query parameters in query/,
    ],
    ['a fragment in the path', get('/ads#top'), /^path must not contain "\?" or "#"/],
    ['a space in the path', get('/ads/a b'), /^path must be visible ASCII/],
    [
      'a path over 2048 characters',
      get(`/${'a'.repeat(2048)}`),
      /^`path` must be at most 2048 characters \(got 2049\)/,
    ],
    ['a body on a GET', get('/ads', { bodyJson: '{}' }), /^body_json must be empty for GET/],
    [
      'an idempotency key on a GET',
      get('/ads', { idempotencyKey: 'k' }),
      /^idempotency_key is only for POST/,
    ],
    [
      'a POST body that is not JSON',
      post('/ads/1', { bodyJson: 'status=paused' }),
      /^body_json must be the text of a JSON object.*not JSON/,
    ],
    [
      'a POST body that is an array',
      post('/ads/1', { bodyJson: '[1]' }),
      /^body_json must be the text of a JSON object.*got an array/,
    ],
    [
      'a POST without a body',
      post('/ads/1', { bodyJson: '' }),
      /^body_json must be the text of a JSON object/,
    ],
    [
      'a POST without an idempotency key',
      post('/ads/1', { idempotencyKey: '' }),
      /^idempotency_key is required for POST/,
    ],
    [
      'an idempotency key over 255 characters',
      post('/ads/1', { idempotencyKey: 'k'.repeat(256) }),
      /^`idempotency_key` must be at most 255 characters/,
    ],
    [
      'a file body on another path',
      upload(FILE, { path: '/files/1' }),
      /^body \(a file's bytes\) is only for POST \/files; send JSON in body_json \(got a body for POST "\/files\/1"\)/,
    ],
    [
      'a file body on a GET',
      upload(FILE, { method: 'GET', idempotencyKey: '' }),
      /^body \(a file's bytes\) is only for POST \/files/,
    ],
    [
      'a POST to /files without a body',
      upload(new Uint8Array(0), { bodyJson: '{}' }),
      /^body is required for POST \/files: the file's bytes, with content_type image\/png or image\/jpeg/,
    ],
    [
      'a content_type without a body',
      post('/ads/1', { contentType: 'image/png' }),
      /^content_type is only for a file upload \(POST \/files\) with its bytes in body; leave it empty \(got "image\/png"\)/,
    ],
    [
      'an upload without a content_type',
      upload(FILE, { contentType: '' }),
      /^content_type must be image\/png or image\/jpeg for a file upload \(POST \/files\) \(got none\)/,
    ],
    [
      'an upload of another type',
      upload(FILE, { contentType: 'image/gif' }),
      /^content_type must be image\/png or image\/jpeg .*\(got "image\/gif"\)/,
    ],
    [
      'an upload with a JSON body too',
      upload(FILE, { bodyJson: '{}' }),
      /^body_json must be empty for a file upload \(POST \/files\): the file's bytes go in body/,
    ],
    [
      'an upload over 5 MiB',
      upload(randomBytes(5 * 1024 * 1024 + 1)),
      /^body must be at most 5242880 bytes \(5 MiB\) \(got 5242881\)/,
    ],
    [
      'an upload without an idempotency key',
      upload(FILE, { idempotencyKey: '' }),
      /^idempotency_key is required for POST/,
    ],
    [
      'a query parameter without a name',
      get('/ads', { query: [{ name: '', value: 'x' }] }),
      /^`query\[0\]\.name` must be 1 to 256 characters/,
    ],
  ];
  for (const [what, request, message] of cases) {
    it(`refuses ${what} with InvalidArgument and sends nothing`, async () => {
      await refused(proxy.client.call(request, as(admin)), Code.InvalidArgument, message);
      assert.equal(platform.seen.length, 0);
    });
  }

  it('accepts a path of exactly 2048 characters', async () => {
    const res = await proxy.client.call(get(`/${'a'.repeat(2047)}`), as(admin));
    assert.equal(res.status, 200);
    assert.equal(platform.seen[0]?.path, `/${'a'.repeat(2047)}`);
  });
});

describe('Call: who may call', () => {
  it('lets a read-only credential read through a read-only connection', async () => {
    const viewer = principal({ role: 'viewer', scopes: ['read'] });
    const readOnly = await harness.connect(viewer.workspaceId, { canWrite: false });
    const res = await proxy.client.call(get('/ads', { accountId: readOnly }), as(viewer));
    assert.equal(res.status, 200);
    assert.equal(platform.seen.length, 1);
  });

  it('refuses a read to a caller without the read scope', async () => {
    const writer = principal({ workspaceId: admin.workspaceId, scopes: ['write'] });
    await refused(
      proxy.client.call(get('/ads'), as(writer)),
      Code.PermissionDenied,
      /reading from the ad platform needs the read scope/,
    );
    assert.equal(platform.seen.length, 0);
  });

  it('refuses a POST to a caller without the write scope', async () => {
    const reader = principal({ workspaceId: admin.workspaceId, scopes: ['read'] });
    await refused(
      proxy.client.call(post('/ads/1'), as(reader)),
      Code.PermissionDenied,
      /changing an ad account \(POST\) needs the write scope; this caller has role admin and scopes \[read\]/,
    );
    assert.equal(platform.seen.length, 0);
  });

  it('refuses a POST through a connection that does not allow changes, even to a writer', async () => {
    const readOnly = await harness.connect(admin.workspaceId, { canWrite: false });
    await refused(
      proxy.client.call(post('/ads/1', { accountId: readOnly }), as(admin)),
      Code.PermissionDenied,
      new RegExp(`connection to ad account ${readOnly} \\("Test account"\\) is read-only`),
    );
    assert.equal(platform.seen.length, 0);
  });

  it("answers NotFound for another workspace's account and sends nothing", async () => {
    await refused(
      proxy.client.call(get('/ads'), as(principal())),
      Code.NotFound,
      new RegExp(`^no ad account ${accountId} in this workspace; ads_list_accounts lists them$`),
    );
    assert.equal(platform.seen.length, 0);
  });
});

describe('Call: what is sent and returned', () => {
  it('sends the credential as a bearer token, Accept JSON, the request id, the path and the query', async () => {
    platform.answer(json({ data: [{ id: 'ad_1' }], paging: { has_more: false } }));
    const res = await withRequestId('req-call-1', () =>
      proxy.client.call(
        get('/ads', {
          query: [
            { name: 'include', value: 'serving_issues' },
            { name: 'include', value: 'more' },
            { name: 'name', value: 'Spring & summer' },
          ],
        }),
        as(admin),
      ),
    );
    assert.deepEqual(
      { status: res.status, body: JSON.parse(res.bodyJson), attempts: res.attempts },
      { status: 200, body: { data: [{ id: 'ad_1' }], paging: { has_more: false } }, attempts: 1 },
    );
    const [seen] = platform.seen;
    assert.equal(seen?.method, 'GET');
    assert.equal(seen?.path, '/ads');
    assert.deepEqual(seen?.query.getAll('include'), ['serving_issues', 'more']);
    assert.equal(seen?.query.get('name'), 'Spring & summer');
    assert.equal(seen?.headers.authorization, 'Bearer sbx_the-credential');
    assert.equal(seen?.headers.accept, 'application/json');
    assert.equal(seen?.headers['x-request-id'], 'req-call-1');
    assert.equal(seen?.headers['idempotency-key'], undefined);
  });

  it('sends a POST with its JSON body and Idempotency-Key', async () => {
    const res = await proxy.client.call(post('/ads/ad_1', { idempotencyKey: 'change-42' }), as(admin));
    assert.equal(res.status, 200);
    const [seen] = platform.seen;
    assert.equal(seen?.method, 'POST');
    assert.equal(seen?.path, '/ads/ad_1');
    assert.equal(seen?.headers['idempotency-key'], 'change-42');
    assert.match(String(seen?.headers['content-type']), /^application\/json/);
    assert.deepEqual(JSON.parse(seen?.body ?? ''), { status: 'paused' });
  });

  it('returns a 4xx answer as a response with its body, not as an error, and does not retry it', async () => {
    const error = { error: { code: 'not_found', message: 'no ad ad_9' } };
    platform.answer(json(error, 404));
    const res = await proxy.client.call(get('/ads/ad_9'), as(admin));
    assert.deepEqual(
      { status: res.status, body: JSON.parse(res.bodyJson), attempts: res.attempts },
      { status: 404, body: error, attempts: 1 },
    );
    platform.answer(json({ error: { code: 'conflict', message: 'busy' } }, 409));
    const conflict = await proxy.client.call(post('/ads/ad_9'), as(admin));
    assert.equal(conflict.status, 409);
    assert.equal(platform.seen.length, 2);
  });

  it('returns an empty body as empty text', async () => {
    platform.answer((_req, res) => {
      res.writeHead(204);
      res.end();
    });
    const res = await proxy.client.call(get('/ads'), as(admin));
    assert.deepEqual({ status: res.status, bodyJson: res.bodyJson }, { status: 204, bodyJson: '' });
  });

  it('keeps the platform’s JSON text exactly, big integers included', async () => {
    const text = '{"budget_micros":12345678901234567890,"name":"A"}';
    platform.answer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(text);
    });
    const res = await proxy.client.call(get('/campaigns/1'), as(admin));
    assert.equal(res.bodyJson, text);
  });

  /** An answer that declares more bytes than the proxy reads (and is cut short: it is refused unread). */
  const answerOverTheCap: Answer = (_req, res) => {
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': String(DEFAULT_MAX_RESPONSE_BYTES + 1),
    });
    res.end('{}');
  };

  it('refuses a read whose answer is over the cap as a question to ask smaller, without asking again', async () => {
    platform.answer(answerOverTheCap);
    await refused(
      proxy.client.call(get('/ads/ad_1/insights'), as(admin)),
      Code.FailedPrecondition,
      new RegExp(
        `exceeds ${DEFAULT_MAX_RESPONSE_BYTES} bytes, the most this service reads for GET /ads/ad_1/insights; nothing was changed. Ask for less in one request: a smaller limit`,
      ),
    );
    assert.equal(platform.seen.length, 1);
  });

  it('reports a change whose answer is over the cap as an unknown outcome, without sending it again', async () => {
    platform.answer(answerOverTheCap);
    await refused(
      proxy.client.call(post('/ads/ad_1'), as(admin)),
      Code.Unavailable,
      /exceeds \d+ bytes; gave up after 1 attempt\. The outcome is unknown/,
    );
    assert.equal(platform.seen.length, 1);
  });

  it('refuses a response that is not a JSON object or array as an unreadable response', async () => {
    const answers: [string, string][] = [
      ['text/html', '<html>oops</html>'],
      ['application/json', '{"data": ['],
      ['application/json', '42'],
      ['text/plain', '{"data":[]}'],
    ];
    for (const [type, body] of answers) {
      platform.answer((_req, res) => {
        res.writeHead(200, { 'content-type': type });
        res.end(body);
      });
      await refused(
        proxy.client.call(get('/ads'), as(admin)),
        Code.Unavailable,
        /^the platform sent an unreadable response/,
      );
    }
    assert.equal(platform.seen.length, answers.length);
  });

  it('passes on a refusal whose body is not JSON by its status alone, not as an unreadable answer', async () => {
    const answers: [number, string, string][] = [
      [404, 'text/html', '<html>Not Found</html>'],
      [400, 'application/json', '{"message": '],
    ];
    for (const [status, type, body] of answers) {
      platform.answer((_req, res) => {
        res.writeHead(status, { 'content-type': type });
        res.end(body);
      });
      const res = await proxy.client.call(get('/ads/ad_1'), as(admin));
      assert.deepEqual([res.status, res.bodyJson], [status, '']);
    }
    assert.equal(platform.seen.length, answers.length, 'a refusal is not asked again');
  });

  it('does not follow a redirect', async () => {
    platform.answer((_req, res) => {
      res.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' });
      res.end();
    });
    await refused(
      proxy.client.call(get('/ads'), as(admin)),
      Code.Unavailable,
      /HTTP 302, which this service does not follow/,
    );
    assert.equal(platform.seen.length, 1);
  });
});

describe('Call: a file upload', () => {
  it('sends the bytes as they are with their Content-Type and Idempotency-Key, and returns the JSON answer', async () => {
    const file = { file_id: 'file_0123456789abcdef01234567', mime_type: 'image/jpeg' };
    platform.answer(json(file, 201));
    const res = await proxy.client.call(
      upload(FILE, { contentType: 'image/jpeg', idempotencyKey: 'upload-1' }),
      as(admin),
    );
    assert.deepEqual(
      { status: res.status, body: JSON.parse(res.bodyJson), attempts: res.attempts },
      { status: 201, body: file, attempts: 1 },
    );
    const [seen] = platform.seen;
    assert.equal(seen?.method, 'POST');
    assert.equal(seen?.path, '/files');
    assert.equal(seen?.headers['content-type'], 'image/jpeg');
    assert.equal(seen?.headers['content-length'], String(FILE.length));
    assert.equal(seen?.headers['idempotency-key'], 'upload-1');
    assert.equal(seen?.headers.authorization, 'Bearer sbx_the-credential');
    assert.ok(seen?.bytes.equals(FILE));
  });

  it('carries a file of exactly 5 MiB through the Connect server to the platform', async () => {
    // A replica with a platform time-out for 5 MiB on a busy machine: the suite's 300 ms is for
    // the small calls whose time-outs it tests.
    const roomy = await harness.proxy({ platformUrl: platform.url, timeoutMs: 10_000 });
    try {
      const big = randomBytes(5 * 1024 * 1024);
      const res = await roomy.client.call(upload(big), as(admin));
      assert.deepEqual({ status: res.status, attempts: res.attempts }, { status: 200, attempts: 1 });
      assert.ok(platform.seen[0]?.bytes.equals(big));
    } finally {
      await roomy.close();
    }
  });

  it('retries an upload after a 5xx with the same bytes and Idempotency-Key', async () => {
    platform.answer((req, res, n) =>
      n === 1 ? json({}, 503)(req, res, n) : json({ file_id: 'file_1' }, 201)(req, res, n),
    );
    const res = await proxy.client.call(upload(FILE, { idempotencyKey: 'upload-7' }), as(admin));
    assert.deepEqual({ status: res.status, attempts: res.attempts }, { status: 201, attempts: 2 });
    assert.deepEqual(
      platform.seen.map((s) => [
        s.headers['idempotency-key'],
        s.headers['content-type'],
        s.bytes.equals(FILE),
      ]),
      [
        ['upload-7', 'image/png', true],
        ['upload-7', 'image/png', true],
      ],
    );
  });

  it('reports an upload that failed every time as an unknown outcome, safe to retry with the same key', async () => {
    platform.answer(json({}, 500));
    await refused(
      proxy.client.call(upload(FILE), as(admin)),
      Code.Unavailable,
      /^the platform answered POST \/files with HTTP 500; gave up after 3 attempts\. The outcome is unknown/,
    );
    assert.equal(platform.seen.length, 3);
  });

  it('refuses an upload to a caller without the write scope, and through a read-only connection', async () => {
    const reader = principal({ workspaceId: admin.workspaceId, role: 'viewer', scopes: ['read'] });
    await refused(
      proxy.client.call(upload(FILE), as(reader)),
      Code.PermissionDenied,
      /^changing an ad account \(POST\) needs the write scope/,
    );
    const readOnly = await harness.connect(admin.workspaceId, { canWrite: false });
    await refused(
      proxy.client.call(upload(FILE, { accountId: readOnly }), as(admin)),
      Code.PermissionDenied,
      /is read-only: it allows no changes/,
    );
    assert.equal(platform.seen.length, 0);
  });
});

describe('Call: a read made with POST', () => {
  const report = (extra: Partial<CallInit> = {}): CallInit =>
    post('/conversions/insights', {
      bodyJson: '{"aggregation_level":"account","time_ranges":["2026-11-01..2026-11-07"]}',
      idempotencyKey: '',
      ...extra,
    });

  it('lets a read-only credential POST /conversions/insights through a read-only connection, with no idempotency key', async () => {
    const viewer = principal({ role: 'viewer', scopes: ['read'] });
    const readOnly = await harness.connect(viewer.workspaceId, { canWrite: false });
    platform.answer(json({ data: [{ conversions: 3 }] }));
    const res = await proxy.client.call(report({ accountId: readOnly }), as(viewer));
    assert.deepEqual(
      { status: res.status, body: JSON.parse(res.bodyJson) },
      { status: 200, body: { data: [{ conversions: 3 }] } },
    );
    const [seen] = platform.seen;
    assert.equal(seen?.method, 'POST');
    assert.equal(seen?.path, '/conversions/insights');
    assert.equal(seen?.headers['idempotency-key'], undefined);
    assert.deepEqual(JSON.parse(seen?.body ?? ''), {
      aggregation_level: 'account',
      time_ranges: ['2026-11-01..2026-11-07'],
    });
  });

  it('refuses an idempotency key on a read-only POST, and still wants one on every other POST', async () => {
    await refused(
      proxy.client.call(report({ idempotencyKey: 'k-1' }), as(admin)),
      Code.InvalidArgument,
      /^idempotency_key must be empty for POST \/conversions\/insights: it is a read/,
    );
    await refused(
      proxy.client.call(post('/conversions/pixels', { idempotencyKey: '' }), as(admin)),
      Code.InvalidArgument,
      /^idempotency_key is required for POST/,
    );
    assert.equal(platform.seen.length, 0);
  });

  it('retries a read-only POST after 5xx as it retries a GET, and says nothing was changed', async () => {
    platform.answer(json({ error: 'down' }, 503));
    await refused(
      proxy.client.call(report(), as(admin)),
      Code.Unavailable,
      /^the platform answered POST \/conversions\/insights with HTTP 503; gave up after 3 attempts; nothing was changed/,
    );
    assert.equal(platform.seen.length, 3);
  });
});

describe('Call: retries', () => {
  it('retries a GET after a 500 and returns the answer that follows', async () => {
    platform.answer((req, res, n) =>
      n < 3 ? json({ error: 'boom' }, 500)(req, res, n) : json({ ok: n })(req, res, n),
    );
    const res = await proxy.client.call(get('/ads'), as(admin));
    assert.deepEqual(
      { status: res.status, body: JSON.parse(res.bodyJson), attempts: res.attempts },
      { status: 200, body: { ok: 3 }, attempts: 3 },
    );
    assert.equal(platform.seen.length, 3);
  });

  it('gives up on a GET after 3 attempts of 5xx as Unavailable saying nothing was changed', async () => {
    platform.answer(json({ error: 'down' }, 503));
    await refused(
      proxy.client.call(get('/ads'), as(admin)),
      Code.Unavailable,
      /^the platform answered GET \/ads with HTTP 503; gave up after 3 attempts; nothing was changed/,
    );
    assert.equal(platform.seen.length, 3);
  });

  it('retries a POST after a 5xx with the same Idempotency-Key and body every time', async () => {
    platform.answer((req, res, n) =>
      n === 1 ? json({}, 502)(req, res, n) : json({ id: 'ad_1', status: 'paused' })(req, res, n),
    );
    const res = await proxy.client.call(post('/ads/ad_1', { idempotencyKey: 'change-7' }), as(admin));
    assert.deepEqual({ status: res.status, attempts: res.attempts }, { status: 200, attempts: 2 });
    assert.deepEqual(
      platform.seen.map((s) => s.headers['idempotency-key']),
      ['change-7', 'change-7'],
    );
    assert.deepEqual(
      platform.seen.map((s) => s.body),
      ['{"status":"paused"}', '{"status":"paused"}'],
    );
  });

  it('times out a request that takes too long, retries it, and reports Unavailable with the attempts', async () => {
    platform.answer(() => {
      // Never answers.
    });
    const started = performance.now();
    await refused(
      proxy.client.call(get('/slow'), as(admin)),
      Code.Unavailable,
      /^the platform did not answer GET \/slow within 300 ms; gave up after 3 attempts; nothing was changed/,
    );
    assert.equal(platform.seen.length, 3);
    assert.ok(performance.now() - started < 5000);
  });

  it('reports a POST that timed out every time as an unknown outcome, safe to retry with the same key', async () => {
    platform.answer(() => {
      // Never answers.
    });
    await refused(
      proxy.client.call(post('/ads/ad_1', { idempotencyKey: 'change-8' }), as(admin)),
      Code.Unavailable,
      /gave up after 3 attempts\. The outcome is unknown: the change may or may not have been applied; retrying with the same idempotency key is safe/,
    );
    assert.deepEqual(
      platform.seen.map((s) => s.headers['idempotency-key']),
      ['change-8', 'change-8', 'change-8'],
    );
  });

  it('waits out a short 429 Retry-After and then succeeds', async () => {
    platform.answer((req, res, n) =>
      n === 1
        ? json({ error: { code: 'rate_limited', message: 'slow down' } }, 429, { 'retry-after': '1' })(
            req,
            res,
            n,
          )
        : json({ ok: true })(req, res, n),
    );
    const started = performance.now();
    const res = await proxy.client.call(post('/ads/ad_1', { idempotencyKey: 'change-9' }), as(admin));
    assert.deepEqual({ status: res.status, attempts: res.attempts }, { status: 200, attempts: 2 });
    assert.ok(performance.now() - started >= 950, 'did not wait for Retry-After');
    assert.deepEqual(
      platform.seen.map((s) => s.headers['idempotency-key']),
      ['change-9', 'change-9'],
    );
  });

  it('passes a long 429 Retry-After to the caller as ResourceExhausted with retry-after, without waiting', async () => {
    platform.answer(json({ error: { code: 'rate_limited' } }, 429, { 'retry-after': '30' }));
    const started = performance.now();
    const err = await refused(
      proxy.client.call(get('/ads'), as(admin)),
      Code.ResourceExhausted,
      new RegExp(`the ad platform is rate limiting ad account ${accountId}.*retry in 30 s`),
    );
    assert.equal(err.metadata.get('retry-after'), '30');
    assert.equal(platform.seen.length, 1);
    assert.ok(performance.now() - started < 2000);
  });

  it('reads a Retry-After of more digits than fit a short wait as a long one: passed on, not waited out and sent again', async () => {
    platform.answer(json({}, 429, { 'retry-after': '99999999999' }));
    const err = await refused(
      proxy.client.call(get('/ads'), as(admin)),
      Code.ResourceExhausted,
      /retry in 31536000 s/,
    );
    assert.equal(err.metadata.get('retry-after'), '31536000');
    assert.equal(platform.seen.length, 1);
  });

  it('stops after 3 attempts when the platform keeps rate limiting', async () => {
    platform.answer(json({}, 429, { 'retry-after': '0' }));
    const err = await refused(
      proxy.client.call(get('/ads'), as(admin)),
      Code.ResourceExhausted,
      /retry in 1 s/,
    );
    assert.equal(err.metadata.get('retry-after'), '1');
    assert.equal(platform.seen.length, 3);
  });

  it('reports a platform that cannot be reached as Unavailable after 3 attempts', async () => {
    const gone = await startFakePlatform();
    await gone.close();
    const elsewhere = await harness.proxy({ platformUrl: gone.url });
    try {
      await refused(
        elsewhere.client.call(get('/ads'), as(admin)),
        Code.Unavailable,
        /^the platform could not be reached for GET \/ads; gave up after 3 attempts/,
      );
    } finally {
      await elsewhere.close();
    }
  });
});

describe('Call: accounts that share the platform', () => {
  it('lets no account hold every connection: a slow account’s calls wait their turn, another account’s go at once', async () => {
    const slowOwner = principal();
    const slowAccount = await harness.connect(slowOwner.workspaceId, { credential: 'sbx_slow' });
    let inFlight = 0;
    let mostInFlight = 0;
    // The slow account's answers are held until the other account has had its own.
    let answerSlowOnes: () => void = () => undefined;
    const slowOnesAnswered = new Promise<void>((resolve) => {
      answerSlowOnes = resolve;
    });
    platform.answer((req, res) => {
      if (req.headers.authorization !== 'Bearer sbx_slow') return json({ fast: true })(req, res, 0);
      inFlight += 1;
      mostInFlight = Math.max(mostInFlight, inFlight);
      void slowOnesAnswered.then(() => {
        inFlight -= 1;
        json({ slow: true })(req, res, 0);
      });
    });
    const patient = await harness.proxy({ platformUrl: platform.url, timeoutMs: 10_000 });
    try {
      // More calls than a shared pool of connections would hold.
      const flood = Array.from({ length: 150 }, () =>
        patient.client.call({ accountId: slowAccount, method: 'GET', path: '/ads' }, as(slowOwner)),
      );
      while (inFlight < DEFAULT_MAX_IN_FLIGHT_PER_ACCOUNT) await pause(20);
      await pause(200);
      const other = await Promise.race([
        patient.client.call(get('/ads'), as(admin)),
        pause(2000).then(() => 'still waiting'),
      ]);
      answerSlowOnes();
      assert.notEqual(other, 'still waiting', 'the other account’s call waited behind the slow account’s');
      const answers = await Promise.all(flood);
      assert.ok(answers.every((a) => a.status === 200 && JSON.parse(a.bodyJson).slow === true));
      assert.equal(mostInFlight, DEFAULT_MAX_IN_FLIGHT_PER_ACCOUNT);
    } finally {
      answerSlowOnes();
      await patient.close();
    }
  });
});
