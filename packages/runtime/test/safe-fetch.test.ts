import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { after, before, test } from 'node:test';
import { type HttpsSite, startHttpsSite } from '@adsmcp/testkit/https-site';
import { createSafeFetcher, refusedRange, SafeFetchError } from '../src/safe-fetch.ts';

// Every request in this file goes to 127.0.0.1 (the test site) or is refused before connecting;
// other ranges are checked through refusedRange alone, never by sending anything to them.

let site: HttpsSite;
let seen: IncomingHttpHeaders[] = [];

before(async () => {
  site = await startHttpsSite(() => {}, ['shop.test', 'www.shop.test']);
});
after(() => site.close());

function serve(routes: Record<string, (res: import('node:http').ServerResponse) => void>): void {
  seen = [];
  site.handle((req, res) => {
    seen.push(req.headers);
    const route = routes[req.url ?? '/'];
    if (route) route(res);
    else res.writeHead(404).end('not here');
  });
}

function refusedWith(reason: string, message?: RegExp) {
  return (err: unknown) => {
    assert.ok(err instanceof SafeFetchError, `expected a SafeFetchError, got ${String(err)}`);
    assert.equal(err.reason, reason, err.message);
    if (message) assert.match(err.message, message);
    return true;
  };
}

test('every spelling of a loopback host is refused before any connection, by the default fetcher', async () => {
  serve({ '/': (res) => res.end('should never be read') });
  const port = site.port;
  const spellings = [
    `https://127.0.0.1:${port}/`,
    `https://127.1:${port}/`,
    `https://2130706433:${port}/`,
    `https://0x7f.1:${port}/`,
    `https://0177.0.0.1:${port}/`,
    `https://[::1]:${port}/`,
    `https://[::ffff:127.0.0.1]:${port}/`,
    `https://[::ffff:7f00:1]:${port}/`,
    `https://[::127.0.0.1]:${port}/`, // IPv4-compatible
    `https://[64:ff9b::127.0.0.1]:${port}/`, // NAT64
    `https://[2002:7f00:1::]:${port}/`, // 6to4
    `https://localhost:${port}/`,
    `https://localhost.:${port}/`,
    `https://app.localhost:${port}/`,
  ];
  const fetcher = createSafeFetcher();
  for (const url of spellings) {
    await assert.rejects(fetcher(url), (err: unknown) => {
      assert.ok(err instanceof SafeFetchError, `${url}: ${String(err)}`);
      assert.match(err.message, /loopback/, `${url}: ${err.message}`);
      return true;
    });
  }
  assert.equal(site.connections(), 0, 'no connection was made');
});

test('a name the resolver maps to loopback is refused, even with the right CA, unless the test lets 127.0.0.1 through', async () => {
  serve({ '/': (res) => res.end('hello') });
  const { resolve, ca } = site.fetcherOptions();
  const before = site.connections();
  await assert.rejects(
    createSafeFetcher({ resolve, ca })(`${site.origin('shop.test')}/`),
    refusedWith('address_refused', /^the host resolves to a loopback address \(127\.0\.0\.1\)$/),
  );
  assert.equal(site.connections(), before, 'no connection was made');
});

test('a name resolving to several addresses is refused when any one is refused', async () => {
  const { ca, allowAddress } = site.fetcherOptions();
  const fetcher = createSafeFetcher({ resolve: async () => ['127.0.0.1', '::1'], ca, allowAddress });
  const before = site.connections();
  await assert.rejects(
    fetcher(`${site.origin('shop.test')}/`),
    refusedWith('address_refused', /loopback.*::1/),
  );
  assert.equal(site.connections(), before);
});

test('the address policy refuses every special-purpose range by its name, and IPv6 forms by the IPv4 inside', () => {
  const cases: Array<[string, string]> = [
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['fe80::1', 'linkLocal'],
    ['fd00:ec2::254', 'uniqueLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['100.100.100.200', 'carrierGradeNat'],
    ['192.0.0.192', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['168.63.129.16', 'metadata'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['::ffff:169.254.169.254', 'linkLocal'],
    ['::ffff:10.0.0.1', 'private'],
    ['::a00:1', 'private'],
    ['64:ff9b::a9fe:a9fe', 'linkLocal'],
    ['64:ff9b:1::1', 'rfc6052'],
    ['2002:a00:1::1', 'private'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'teredo'],
    ['2001:db8::1', 'reserved'],
  ];
  for (const [address, range] of cases) assert.equal(refusedRange(address), range, address);
  for (const address of ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c', '::ffff:93.184.215.14']) {
    assert.equal(refusedRange(address), undefined, `${address} is ordinary public unicast`);
  }
});

test('a page is fetched from the test site with its status, headers, body and final URL', async () => {
  serve({
    '/page': (res) =>
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<title>Shop</title>'),
  });
  const res = await createSafeFetcher(site.fetcherOptions())(`${site.origin('shop.test')}/page`, {
    accept: 'text/html',
  });
  assert.equal(res.status, 200);
  assert.equal(res.url, `${site.origin('shop.test')}/page`);
  assert.equal(res.contentType, 'text/html; charset=utf-8');
  assert.equal(res.body.toString('utf8'), '<title>Shop</title>');
  assert.equal(seen[0]?.accept, 'text/html');
});

test('the name is resolved once per hop and the connection goes to the address that was checked', async () => {
  serve({ '/page': (res) => res.end('ok') });
  const { ca, allowAddress } = site.fetcherOptions();
  const asked: string[] = [];
  const fetcher = createSafeFetcher({
    ca,
    allowAddress,
    // a rebinding resolver: checked once, it would answer something else the second time
    resolve: async (hostname) => {
      asked.push(hostname);
      return asked.length === 1 ? ['127.0.0.1'] : ['127.0.0.3'];
    },
  });
  const res = await fetcher(`${site.origin('shop.test')}/page`);
  assert.equal(res.body.toString(), 'ok');
  assert.deepEqual(asked, ['shop.test']);
});

test('redirects are followed and checked again, and no cookie set on the way is sent back', async () => {
  serve({
    '/a': (res) => res.writeHead(302, { location: '/b', 'set-cookie': 'sid=secret' }).end(),
    '/b': (res) => res.writeHead(301, { location: `${site.origin('www.shop.test')}/c` }).end(),
    '/c': (res) => res.end('arrived'),
  });
  const fetcher = createSafeFetcher(site.fetcherOptions());
  const res = await fetcher(`${site.origin('shop.test')}/a`);
  assert.equal(res.body.toString(), 'arrived');
  assert.equal(res.url, `${site.origin('www.shop.test')}/c`);
  assert.equal(seen.length, 3);
  for (const headers of seen) {
    assert.equal(headers.cookie, undefined, 'no cookie');
    assert.equal(headers.authorization, undefined, 'no credentials');
  }
});

test('a redirect to a loopback address or to http is refused before following it', async () => {
  const port = site.port;
  const fetcher = createSafeFetcher(site.fetcherOptions());
  for (const [target, reason] of [
    [`https://127.0.0.2:${port}/`, 'address_refused'],
    [`https://[::1]:${port}/`, 'address_refused'],
    [`https://localhost:${port}/`, 'host_refused'],
    [`http://shop.test:${port}/`, 'scheme_not_allowed'],
  ] as const) {
    serve({ '/go': (res) => res.writeHead(307, { location: target }).end() });
    const before = site.connections();
    await assert.rejects(fetcher(`${site.origin('shop.test')}/go`), refusedWith(reason));
    assert.equal(site.connections(), before + 1, `only the first hop connected (${target})`);
  }
});

test('more than five redirects are refused', async () => {
  serve({ '/loop': (res) => res.writeHead(302, { location: '/loop' }).end() });
  await assert.rejects(
    createSafeFetcher(site.fetcherOptions())(`${site.origin('shop.test')}/loop`),
    refusedWith('too_many_redirects', /more than 5 redirects/),
  );
  assert.equal(seen.length, 6);
});

test('http, URLs with credentials and URLs that do not parse are refused before any connection', async () => {
  const fetcher = createSafeFetcher(site.fetcherOptions());
  const before = site.connections();
  await assert.rejects(
    fetcher(`http://shop.test:${site.port}/`),
    refusedWith('scheme_not_allowed', /^url must use https$/),
  );
  await assert.rejects(
    fetcher(`https://user:pw@shop.test:${site.port}/`),
    refusedWith('invalid_url', /user name or password/),
  );
  await assert.rejects(fetcher('not a url'), refusedWith('invalid_url'));
  assert.equal(site.connections(), before);
});

test('a response larger than maxBytes is refused, whether announced or streamed', async () => {
  serve({
    '/announced': (res) => res.writeHead(200, { 'content-length': '2000' }).end('x'.repeat(2000)),
    '/streamed': (res) => {
      res.writeHead(200);
      for (let i = 0; i < 20; i++) res.write('y'.repeat(100));
      res.end();
    },
    '/fits': (res) => res.end('z'.repeat(1000)),
  });
  const fetcher = createSafeFetcher(site.fetcherOptions());
  for (const path of ['/announced', '/streamed']) {
    await assert.rejects(
      fetcher(`${site.origin('shop.test')}${path}`, { maxBytes: 1000 }),
      refusedWith('too_large', /^response larger than 1000 bytes$/),
    );
  }
  const fits = await fetcher(`${site.origin('shop.test')}/fits`, { maxBytes: 1000 });
  assert.equal(fits.body.length, 1000);
});

test('a site that does not answer in time is given up on', async () => {
  serve({ '/slow': () => {} });
  const fetcher = createSafeFetcher({ ...site.fetcherOptions(), totalTimeoutMs: 300 });
  const started = Date.now();
  await assert.rejects(fetcher(`${site.origin('shop.test')}/slow`), refusedWith('timeout', /300 ms/));
  assert.ok(Date.now() - started < 10_000);
});

test("a fetch stops when its caller's signal is aborted, closing the connection, and fails as cancelled", async () => {
  let closed: Promise<void> | undefined;
  serve({
    '/held': (res) => {
      closed = new Promise((resolve) => res.on('close', () => resolve()));
    },
  });
  const fetcher = createSafeFetcher({ ...site.fetcherOptions(), totalTimeoutMs: 30_000 });
  const caller = new AbortController();
  const started = Date.now();
  const fetching = fetcher(`${site.origin('shop.test')}/held`, { signal: caller.signal });
  while (closed === undefined) await new Promise((r) => setTimeout(r, 10));
  caller.abort();
  await assert.rejects(fetching, refusedWith('cancelled', /cancelled or ran out of time/));
  assert.ok(Date.now() - started < 10_000, 'given up at once, not after the 30 s limit');
  await closed;
  // A signal aborted already: nothing is sent.
  const before = seen.length;
  await assert.rejects(
    fetcher(`${site.origin('shop.test')}/held`, { signal: AbortSignal.abort() }),
    refusedWith('cancelled'),
  );
  assert.equal(seen.length, before);
});
