/**
 * A service declared with startService, run as its own process by service-kit.test.ts: a consumer,
 * two jobs and an HTTP server that answers with the principal its token verifies to. Each part
 * prints a line when it stops, so the test sees the shutdown order.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { optional, readConfig, serviceConfig } from '../src/config.ts';
import { consume, type ServiceServer, startService } from '../src/service-kit.ts';
import type { IssuerName } from '../src/trust.ts';

const say = (event: string, extra: Record<string, unknown> = {}): void => {
  process.stdout.write(`${JSON.stringify({ event, ...extra })}\n`);
};

const trusts = (process.env.KIT_TRUSTS ?? 'gateway,changes,optimizer').split(',') as IssuerName[];

startService({
  name: 'marketing',
  config: () =>
    readConfig({ ...serviceConfig, CHANGES_PUBLIC_KEY: optional(), OPTIMIZER_PUBLIC_KEY: optional() }),
  database: {
    schema: process.env.KIT_SCHEMA ?? 'kit',
    migrationsDir: process.env.KIT_MIGRATIONS ?? '',
    bus: true,
  },
  trusts,
  peers: () => ({ started: new Date().toISOString() }),
  consumers: () => [
    consume<{ n: number }>({
      name: 'kit-test',
      topic: 'kit-test',
      handler: async (message) => say('handled', { n: message.payload.n }),
    }),
  ],
  jobs: ({ pool }) => [
    async () => say('job a stopped'),
    {
      async stop() {
        // The pool is still open when the jobs stop: a job may finish a query it started.
        const { rows } = await pool.query<{ one: number }>('SELECT 1 AS one');
        say('job b stopped', { pool_open: rows[0]?.one === 1 });
      },
    },
  ],
  server: ({ verifier }): ServiceServer => {
    const server = http.createServer((req, res) => {
      const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
      verifier.verify(token).then(
        (principal) =>
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(principal)),
        (err: unknown) => res.writeHead(401).end(err instanceof Error ? err.message : String(err)),
      );
    });
    return {
      listen: (port, host) =>
        new Promise((resolve) =>
          server.listen(port, host, () => resolve((server.address() as AddressInfo).port)),
        ),
      close: () =>
        new Promise((resolve) =>
          server.close(() => {
            say('server closed');
            resolve();
          }),
        ),
    };
  },
});
