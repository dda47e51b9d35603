import { createServer, type Server } from 'node:net';

/** Asks the kernel for a free loopback port. */
export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  if (port === undefined) throw new Error('the kernel gave no port');
  return port;
}

/**
 * Asks the kernel for `count` free loopback ports, all different: each is held until all are
 * chosen. Ports asked for one after another are each free, but the kernel may hand the same one
 * out again once it is let go, and two listeners of one process (a Kafka node's broker and
 * controller) cannot share a port.
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) {
      const srv = createServer();
      servers.push(srv);
      await new Promise<void>((resolve, reject) => {
        srv.once('error', reject);
        srv.listen(0, '127.0.0.1', resolve);
      });
      const addr = srv.address();
      if (addr === null || typeof addr === 'string') throw new Error('a loopback listener has no port');
      ports.push(addr.port);
    }
    return ports;
  } finally {
    await Promise.all(servers.map((srv) => new Promise<void>((resolve) => srv.close(() => resolve()))));
  }
}
