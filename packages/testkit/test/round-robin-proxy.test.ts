import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { freePort, freePorts } from '../src/free-port.ts';
import { FASTIFY_CLOSING_BODY, startRoundRobinProxy } from '../src/round-robin-proxy.ts';

/** A gateway stand-in that answers with its name and the body it received, counting requests. */
async function backend(name: string, answer?: (res: http.ServerResponse) => void) {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      seen.push(body);
      if (answer) return answer(res);
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`${name}:${body}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, seen, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const post = async (url: string, body: string) => {
  const res = await fetch(url, { method: 'POST', body });
  return { status: res.status, text: await res.text() };
};

test('requests are handed to each gateway in turn, bodies intact', async () => {
  const [a, b] = [await backend('a'), await backend('b')];
  const proxy = await startRoundRobinProxy({ port: 0, targets: [a.url, b.url] });
  try {
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push((await post(`${proxy.url}/mcp`, `call ${i}`)).text);
    assert.deepEqual(answers, ['a:call 0', 'b:call 1', 'a:call 2', 'b:call 3']);
  } finally {
    await Promise.all([proxy.close(), a.close(), b.close()]);
  }
});

test('a request refused by a stopped gateway goes to the next one', async () => {
  const b = await backend('b');
  const stopped = `http://127.0.0.1:${await freePort()}`;
  const proxy = await startRoundRobinProxy({ port: 0, targets: [stopped, b.url] });
  try {
    for (let i = 0; i < 3; i++)
      assert.deepEqual(await post(proxy.url, `x${i}`), { status: 200, text: `b:x${i}` });
  } finally {
    await Promise.all([proxy.close(), b.close()]);
  }
});

test("a request a closing gateway turned away goes to the next one; a gateway's own 503 does not", async () => {
  const closing = await backend('closing', (res) =>
    res.writeHead(503, { 'content-type': 'application/json' }).end(FASTIFY_CLOSING_BODY),
  );
  const own = await backend('own', (res) =>
    res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"database unavailable"}'),
  );
  const b = await backend('b');
  const proxy = await startRoundRobinProxy({ port: 0, targets: [closing.url, b.url] });
  const proxyToOwn = await startRoundRobinProxy({ port: 0, targets: [own.url, b.url] });
  try {
    assert.deepEqual(await post(proxy.url, 'p'), { status: 200, text: 'b:p' });
    assert.equal(closing.seen.length, 1);
    const answer = await post(proxyToOwn.url, 'q');
    assert.deepEqual(answer, { status: 503, text: '{"error":"database unavailable"}' });
    assert.equal(b.seen.length, 1, 'the request the gateway answered itself was not sent again');
  } finally {
    await Promise.all([proxy.close(), proxyToOwn.close(), closing.close(), own.close(), b.close()]);
  }
});

test('the body is forwarded as it arrives: a gateway may answer from the headers before the body is sent', async () => {
  const gateway = http.createServer((req, res) => {
    // Refused from the declared length alone, as the gateway does with a body over its limit.
    res.writeHead(Number(req.headers['content-length']) > 1024 ? 413 : 200).end();
  });
  await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
  const proxy = await startRoundRobinProxy({
    port: 0,
    targets: [`http://127.0.0.1:${(gateway.address() as AddressInfo).port}`],
  });
  try {
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(proxy.url, { method: 'POST', headers: { 'content-length': String(5 << 20) } });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on('error', reject);
      req.flushHeaders();
    });
    assert.equal(status, 413);
  } finally {
    await proxy.close();
    await new Promise<void>((resolve) => gateway.close(() => resolve()));
  }
});

test('when no gateway takes the request the client gets 503 naming each refusal', async () => {
  const proxy = await startRoundRobinProxy({
    port: 0,
    targets: (await freePorts(2)).map((port) => `http://127.0.0.1:${port}`),
  });
  try {
    const res = await post(proxy.url, 'x');
    assert.equal(res.status, 503);
    assert.match(res.text, /no gateway took the request .*ECONNREFUSED.*ECONNREFUSED/);
  } finally {
    await proxy.close();
  }
});
