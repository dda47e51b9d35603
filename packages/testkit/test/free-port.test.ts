/** Free loopback ports for the servers tests start: asked for together, they are all different. */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { freePort, freePorts } from '../src/free-port.ts';

function listenOn(port: number): Promise<void> {
  const srv = createServer();
  return new Promise((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve()));
  });
}

test('ports asked for together are all different, and each is free once given', async () => {
  // Let go one at a time, 200 ports would hold a repeat more often than not (about 14,000 to choose from).
  const ports = await freePorts(200);
  assert.equal(ports.length, 200);
  assert.equal(new Set(ports).size, 200);
  for (const port of ports) await listenOn(port);
});

test('one port asked for alone is free once given', async () => {
  const port = await freePort();
  assert.ok(port > 0 && port < 65536);
  await listenOn(port);
});
