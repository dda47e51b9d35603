import assert from 'node:assert/strict';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import {
  createPlatformClient,
  DEFAULT_MAX_RESPONSE_BYTES,
  PlatformError,
  type PlatformErrorKind,
} from '../src/upstream/platform-client.ts';

const servers: Server[] = [];

/** A real HTTP server on an ephemeral port answering with `handler`; returns its base URL. */
async function platform(handler: RequestListener): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

after(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

const ME = { id: 'act_1', name: 'Acme', currency: 'USD', time_zone: 'UTC' };

function json(body: unknown, status = 200): RequestListener {
  return (_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
}

async function assertFails(
  promise: Promise<unknown>,
  kind: PlatformErrorKind,
  message: RegExp,
): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof PlatformError, String(err));
    assert.equal(err.kind, kind);
    assert.match(err.message, message);
    return true;
  });
}

describe('platform client GET /me', () => {
  it('sends the credential as a bearer token and returns the account', async () => {
    let seen: { path?: string; authorization?: string } = {};
    const base = await platform((req, res) => {
      seen = { path: req.url, authorization: req.headers.authorization };
      json(ME)(req, res);
    });
    const account = await createPlatformClient({ baseUrl: base }).getMe('sbx_secret');
    assert.deepEqual(account, { id: 'act_1', name: 'Acme', currency: 'USD', timeZone: 'UTC' });
    assert.deepEqual(seen, { path: '/me', authorization: 'Bearer sbx_secret' });
  });

  it('reads the expiry of the credential when the platform reports one, and ignores one that is not an instant', async () => {
    const at = '2027-01-27T10:00:00.000Z';
    const reported = await platform(json({ ...ME, credential_expires_at: at }));
    const account = await createPlatformClient({ baseUrl: reported }).getMe('sbx_secret');
    assert.equal(account.credentialExpiresAt?.toISOString(), at);
    const garbled = await platform(json({ ...ME, credential_expires_at: 'next month' }));
    assert.equal(
      (await createPlatformClient({ baseUrl: garbled }).getMe('sbx_secret')).credentialExpiresAt,
      undefined,
    );
  });

  it('resolves /me beneath a base URL with a path', async () => {
    let path: string | undefined;
    const base = await platform((req, res) => {
      path = req.url;
      json(ME)(req, res);
    });
    await createPlatformClient({ baseUrl: `${base}/api/v1` }).getMe('sbx_secret');
    assert.equal(path, '/api/v1/me');
  });

  it('reports a refused credential as unauthorized', async () => {
    const base = await platform(json({ error: { code: 'unauthenticated', message: 'no' } }, 401));
    await assertFails(createPlatformClient({ baseUrl: base }).getMe('x'), 'unauthorized', /HTTP 401/);
  });

  it('reports another error status without its body', async () => {
    const base = await platform(json({ error: 'secret internals' }, 503));
    await assertFails(
      createPlatformClient({ baseUrl: base }).getMe('x'),
      'http_status',
      /^the platform answered GET \/me with HTTP 503$/,
    );
  });

  it('refuses a response larger than the cap, declared or streamed', async () => {
    const big = Buffer.alloc(2 * DEFAULT_MAX_RESPONSE_BYTES, 'a');
    const declared = await platform((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': big.length });
      res.end(big);
    });
    await assertFails(
      createPlatformClient({ baseUrl: declared }).getMe('x'),
      'too_large',
      new RegExp(`exceeds ${DEFAULT_MAX_RESPONSE_BYTES} bytes`),
    );

    const chunked = await platform((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(big.subarray(0, 0.7 * DEFAULT_MAX_RESPONSE_BYTES));
      res.end(big.subarray(0, 0.7 * DEFAULT_MAX_RESPONSE_BYTES));
    });
    await assertFails(
      createPlatformClient({ baseUrl: chunked }).getMe('x'),
      'too_large',
      new RegExp(`exceeds ${DEFAULT_MAX_RESPONSE_BYTES} bytes`),
    );
  });

  it('refuses a response of the wrong shape, type or syntax', async () => {
    for (const body of [
      [ME],
      { ...ME, id: 42 },
      { ...ME, id: '' },
      { ...ME, currency: 'usd' },
      { id: 'act_1', name: 'Acme', currency: 'USD' },
      null,
    ]) {
      const base = await platform(json(body));
      await assertFails(
        createPlatformClient({ baseUrl: base }).getMe('x'),
        'bad_response',
        /unexpected shape/,
      );
    }
    const html = await platform((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html></html>');
    });
    await assertFails(createPlatformClient({ baseUrl: html }).getMe('x'), 'bad_response', /other than JSON/);
    const broken = await platform((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"id":');
    });
    await assertFails(createPlatformClient({ baseUrl: broken }).getMe('x'), 'bad_response', /malformed JSON/);
  });

  it('does not follow a redirect, so the credential goes nowhere else', async () => {
    let elsewhere = 0;
    const other = await platform((req, res) => {
      elsewhere += 1;
      json(ME)(req, res);
    });
    const base = await platform((_req, res) => {
      res.writeHead(302, { location: `${other}/me` });
      res.end();
    });
    await assertFails(createPlatformClient({ baseUrl: base }).getMe('x'), 'http_status', /with HTTP 302$/);
    assert.equal(elsewhere, 0);
  });

  it('gives up after the timeout', async () => {
    const base = await platform(() => {
      // Never answers.
    });
    const started = performance.now();
    await assertFails(
      createPlatformClient({ baseUrl: base, timeoutMs: 200 }).getMe('x'),
      'timeout',
      /did not answer GET \/me within 200 ms/,
    );
    assert.ok(performance.now() - started < 2000);
  });

  it('reports a platform that is down as unreachable', async () => {
    const base = await platform(json(ME));
    const server = servers.pop();
    await new Promise((resolve) => server?.close(resolve));
    await assertFails(
      createPlatformClient({ baseUrl: base }).getMe('x'),
      'unreachable',
      /could not be reached/,
    );
  });
});

describe('platform client send: its deadline and the caller giving up', () => {
  const GET = { method: 'GET', path: '/ads/ad_1', query: [] } as const;

  it('times out a platform that sends its headers and then never finishes the body', async () => {
    const base = await platform((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"id":');
      // The rest never comes.
    });
    const started = performance.now();
    await assertFails(
      createPlatformClient({ baseUrl: base, timeoutMs: 200 }).send('x', GET),
      'timeout',
      /did not answer GET \/ads\/ad_1 within 200 ms/,
    );
    assert.ok(performance.now() - started < 2000);
  });

  it('reports a caller that gives up mid-request as cancelled, not as a timeout, and hangs up', async () => {
    let closed!: () => void;
    const hungUp = new Promise<void>((resolve) => {
      closed = resolve;
    });
    const base = await platform((req) => {
      req.socket.on('close', () => closed());
      // Never answers.
    });
    const caller = new AbortController();
    setTimeout(() => caller.abort(), 100);
    await assertFails(
      createPlatformClient({ baseUrl: base, timeoutMs: 5000 }).send('x', GET, caller.signal),
      'cancelled',
      /the caller gave up on GET \/ads\/ad_1/,
    );
    await hungUp;
  });

  it('sends nothing for a caller that gave up before the call', async () => {
    let requests = 0;
    const base = await platform((req, res) => {
      requests += 1;
      json(ME)(req, res);
    });
    await assertFails(
      createPlatformClient({ baseUrl: base }).send('x', GET, AbortSignal.abort()),
      'cancelled',
      /the caller gave up/,
    );
    assert.equal(requests, 0);
  });

  it('answers within the deadline and leaves no timer behind', async () => {
    const base = await platform(json({ id: 'ad_1' }));
    const caller = new AbortController();
    const reply = await createPlatformClient({ baseUrl: base, timeoutMs: 60_000 }).send(
      'x',
      GET,
      caller.signal,
    );
    assert.equal(reply.status, 200);
    assert.equal(reply.bodyJson, '{"id":"ad_1"}');
    // The call's deadline timer is gone: only this test's own handles keep the loop alive.
    const timers = (process as unknown as { getActiveResourcesInfo(): string[] })
      .getActiveResourcesInfo()
      .filter((r) => r === 'Timeout');
    assert.equal(timers.length, 0);
  });
});
