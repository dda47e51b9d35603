/**
 * The one relaxation an operator may make (`allowHosts`, the webhook sender's
 * WEBHOOK_ALLOW_HOSTS): exactly the listed host:port may be plain http on a loopback address, and
 * a POST sends its body and headers and is never redirected. Every other URL keeps every rule.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { checkUrl, createSafeFetcher, SafeFetchError } from '../src/safe-fetch.ts';

let server: Server;
let port: number;
let seen: { method: string; headers: IncomingHttpHeaders; body: string }[] = [];

before(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', headers: req.headers, body: Buffer.concat(chunks).toString() });
      if (req.url === '/moved') res.writeHead(307, { location: '/elsewhere' }).end();
      else res.writeHead(202).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
after(() => new Promise((resolve) => server.close(resolve)));

const refused = (reason: string, message: RegExp) => (err: unknown) => {
  assert.ok(err instanceof SafeFetchError, String(err));
  assert.equal(err.reason, reason);
  assert.match(err.message, message);
  return true;
};

test('an allowed host:port takes a plain-http POST with its body and headers; a redirect is its answer', async () => {
  seen = [];
  const fetcher = createSafeFetcher({ allowHosts: [`127.0.0.1:${port}`] });
  const res = await fetcher(`http://127.0.0.1:${port}/hook`, {
    method: 'POST',
    body: '{"a":1}',
    headers: { 'content-type': 'application/json', 'x-signature': 't=1,v1=ab' },
  });
  assert.equal(res.status, 202);
  assert.deepEqual(
    seen.map((s) => [s.method, s.body, s.headers['x-signature'], s.headers['content-type']]),
    [['POST', '{"a":1}', 't=1,v1=ab', 'application/json']],
  );
  const moved = await fetcher(`http://127.0.0.1:${port}/moved`, { method: 'POST', body: '{}' });
  assert.equal(moved.status, 307, 'a POST is not redirected');
  assert.equal(seen.length, 2, 'nothing was sent to the redirect target');
});

test('without the allowance, or for another port, the same URL is refused before any connection', async () => {
  seen = [];
  await assert.rejects(
    createSafeFetcher()(`http://127.0.0.1:${port}/hook`),
    refused('scheme_not_allowed', /https/),
  );
  const other = createSafeFetcher({ allowHosts: [`127.0.0.1:${port + 1}`] });
  await assert.rejects(other(`http://127.0.0.1:${port}/hook`), refused('scheme_not_allowed', /https/));
  await assert.rejects(other(`https://127.0.0.1:${port}/hook`), refused('address_refused', /loopback/));
  assert.equal(seen.length, 0);
});

test('checkUrl applies the same rules without fetching', async () => {
  await assert.rejects(checkUrl('http://example.com/x'), refused('scheme_not_allowed', /url must use https/));
  await assert.rejects(
    checkUrl('https://10.0.0.8/x'),
    refused('address_refused', /private address \(10\.0\.0\.8\)/),
  );
  await assert.rejects(checkUrl('https://localhost/x'), refused('host_refused', /loopback name/));
  const ok = await checkUrl('https://hooks.example.com/x', { resolve: async () => ['93.184.215.14'] });
  assert.equal(ok.host, 'hooks.example.com');
  assert.equal(
    (await checkUrl(`http://127.0.0.1:${port}/x`, { allowHosts: [`127.0.0.1:${port}`] })).port,
    String(port),
  );
});
