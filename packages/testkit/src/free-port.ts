import { createServer } from 'node:net';

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
  const servers = Array.from({ length: count }, () => createServer());
  try {
    const listening = await Promise.allSettled(
      servers.map(
        (srv) =>
          new Promise<void>((resolve, reject) => {
            srv.once('error', reject);
            srv.listen(0, '127.0.0.1', resolve);
          }),
      ),
    );
    const failed = listening.find((r) => r.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    return servers.map((srv) => {
      const addr = srv.address();
      if (addr === null || typeof addr === 'string') throw new Error('a loopback listener has no port');
      return addr.port;
    });
  } finally {
    // Every one is let go, those that did not listen too (their close reports that, and is ignored).
    await Promise.all(servers.map((srv) => new Promise<void>((resolve) => srv.close(() => resolve()))));
  }
}
