/**
 * A local HTTPS site for tests of the safe fetcher and what uses it: a self-signed certificate
 * made for the given host names, served on 127.0.0.1 and an ephemeral port, counting the
 * connections it accepts. `fetcherOptions` gives the fetcher what reaches it (a resolver that
 * maps the names to 127.0.0.1, the certificate as CA, and 127.0.0.1 let through); the product
 * never has these options.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { generate } from 'selfsigned';

export type SiteHandler = (req: IncomingMessage, res: ServerResponse) => void;

export interface HttpsSite {
  port: number;
  /** PEM of the self-signed certificate, to trust as a CA. */
  ca: string;
  /** TCP connections accepted so far. */
  connections(): number;
  /** `https://<host>:<port>`. */
  origin(host: string): string;
  /** Replace what the site answers. */
  handle(handler: SiteHandler): void;
  close(): Promise<void>;
  fetcherOptions(): {
    resolve: (hostname: string) => Promise<string[]>;
    ca: string;
    allowAddress: (address: string) => boolean;
  };
}

export const SITE_ADDRESS = '127.0.0.1';

/** startHttpsSite serves `handler` over HTTPS for the names `hosts` (default `shop.test`). */
export async function startHttpsSite(
  handler: SiteHandler,
  hosts: string[] = ['shop.test'],
): Promise<HttpsSite> {
  const pems = await generate([{ name: 'commonName', value: hosts[0] ?? 'shop.test' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true },
      { name: 'subjectAltName', altNames: hosts.map((value) => ({ type: 2 as const, value })) },
    ],
  });
  let current = handler;
  let accepted = 0;
  const server: Server = createServer({ key: pems.private, cert: pems.cert }, (req, res) =>
    current(req, res),
  );
  server.on('connection', () => {
    accepted += 1;
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, SITE_ADDRESS, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const names = new Set(hosts);
  return {
    port,
    ca: pems.cert,
    connections: () => accepted,
    origin: (host) => `https://${host}:${port}`,
    handle: (next) => {
      current = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
    fetcherOptions: () => ({
      resolve: async (hostname) => (names.has(hostname) ? [SITE_ADDRESS] : []),
      ca: pems.cert,
      allowAddress: (address) => address === SITE_ADDRESS,
    }),
  };
}
