import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { type Drain, drainable } from './drain.ts';

async function server(delayMs: number): Promise<{ app: FastifyInstance; port: number; drain: Drain }> {
  const app = Fastify({ return503OnClosing: true });
  const drain = drainable(app, delayMs);
  app.get('/answer', async () => ({ ok: true }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, port: (app.server.address() as AddressInfo).port, drain };
}

/**
 * A client in a process of its own that connects and sends one request at once, creates the file
 * `sent` once its request is written, and prints what came back or the error that ended the
 * connection.
 */
function client(port: number, sent: string): Promise<string> {
  const code = `
    const s = require('node:net').connect(${port}, '127.0.0.1');
    let text = '';
    s.on('connect', () => s.write('GET /answer HTTP/1.1\\r\\nhost: gateway\\r\\n\\r\\n', () =>
      require('node:fs').writeFileSync(${JSON.stringify(sent)}, '')));
    s.on('data', (c) => { text += c; });
    s.on('error', (e) => { text = 'error ' + e.code; });
    s.on('close', () => process.stdout.write(text));`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => {
    out += c.toString('utf8');
  });
  return new Promise((resolve) => child.on('close', () => resolve(out)));
}

/**
 * Keeps this process from reading its sockets until `done()` (at most `ms`), as a busy server
 * would; the client connects (the kernel completes the handshake) and writes meanwhile.
 */
function busyUntil(done: () => boolean, ms: number): void {
  const until = Date.now() + ms;
  while (!done() && Date.now() < until) {
    // Checked synchronously: this process's event loop must not run.
  }
}

test('a connection waiting to be accepted when the stop begins is answered, not reset', async () => {
  const { app, port, drain } = await server(200);
  const dir = mkdtempSync(join(tmpdir(), 'adsmcp-drain-'));
  const sent = join(dir, 'sent');
  const answer = client(port, sent);
  // The client's connection lands in the accept queue while this process is busy; the stop
  // begins before this process has read it.
  busyUntil(() => existsSync(sent), 10_000);
  assert.ok(existsSync(sent), 'the client sent its request while this process was busy');
  const stopped = drain.drain().then(() => app.close());
  const text = await answer;
  await stopped;
  rmSync(dir, { recursive: true, force: true });
  assert.match(text, /^HTTP\/1\.1 200 /, `the answer (${text})`);
  assert.match(text, /\r\nconnection: close\r\n/i, 'an answer during the stop closes its connection');
});

test('the stop serves for its delay, then the app closes as usual', async () => {
  const { app, port, drain } = await server(300);
  assert.equal(drain.draining, false);
  const started = Date.now();
  const draining = drain.drain();
  assert.equal(drain.draining, true);
  const during = await fetch(`http://127.0.0.1:${port}/answer`);
  assert.equal(during.status, 200);
  assert.equal(during.headers.get('connection'), 'close');
  await draining;
  assert.ok(Date.now() - started >= 290, 'the delay was kept');
  await app.close();
  await assert.rejects(fetch(`http://127.0.0.1:${port}/answer`), 'no longer listening after the close');
});
