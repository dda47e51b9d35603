import assert from 'node:assert/strict';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { GuardedSessionManager } from '../src/http2-sessions.ts';

const server = http2.createServer();
const serverSessions: http2.ServerHttp2Session[] = [];
server.on('session', (s) => serverSessions.push(s));
server.on('stream', (stream) => {
  stream.respond({ ':status': 200 });
  stream.end('ok');
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
after(() => {
  for (const s of serverSessions) s.destroy();
  server.close();
});

/** Sends one request on the manager and reads the answer to its end. */
async function call(
  manager: GuardedSessionManager,
): Promise<{ text: string; session: http2.ClientHttp2Session }> {
  const stream = await manager.request('POST', '/x', {}, {});
  stream.end();
  let text = '';
  for await (const chunk of stream) {
    manager.notifyResponseByteRead(stream);
    text += String(chunk);
  }
  return { text, session: stream.session as http2.ClientHttp2Session };
}

test('a GOAWAY on an idle session, with a call right behind it, does not crash the process', async () => {
  const manager = new GuardedSessionManager(url);
  const first = await call(manager);
  assert.equal(first.text, 'ok');
  // The server sends GOAWAY (as a draining service does) while no stream is open; a call made at
  // that moment sees the destroyed session and reconnects, and the manager drops its listeners
  // from the old session before the old session's error is emitted.
  const second = new Promise<Awaited<ReturnType<typeof call>>>((resolve, reject) => {
    first.session.once('goaway', () => call(manager).then(resolve, reject));
  });
  serverSessions.at(-1)?.goaway(http2.constants.NGHTTP2_NO_ERROR);
  const answer = await second;
  assert.equal(answer.text, 'ok');
  assert.notEqual(answer.session, first.session, 'the call went out on a new session');
  // Give the old session time to finish closing and emit its deferred error.
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(first.session.destroyed, true);
  manager.abort();
});
