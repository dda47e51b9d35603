/**
 * Prometheus metrics (prom-client): one registry per process, served as `GET /metrics` on an
 * internal port (`METRICS_PORT`, on `HOST`) that is off unless the variable is set. Recording is
 * always on and cheap (a counter increment, a histogram bucket); only serving needs the port.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Code, ConnectError } from '@connectrpc/connect';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { ConfigError } from './config.ts';
import type { Queryable } from './db.ts';
import type { Logger } from './log.ts';

/** The process's registry: every metric of this module and of the service's own files. */
export const registry = new Registry();

/** Latency buckets in seconds, from a cache hit to a slow platform call. */
export const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

const rpcDuration = new Histogram({
  name: 'adsmcp_rpc_server_duration_seconds',
  help: 'Time to serve one gRPC/Connect call, by method and status code.',
  labelNames: ['method', 'code'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

/** timeRpc times one call a server serves (connect-server.ts, around every handler), `method` being `typeName/name`, with the code it ends with. */
export async function timeRpc<T>(method: string, fn: () => Promise<T>): Promise<T> {
  const end = rpcDuration.startTimer({ method });
  try {
    const res = await fn();
    end({ code: 'ok' });
    return res;
  } catch (err) {
    end({ code: err instanceof ConnectError ? Code[err.code] : 'unknown' });
    throw err;
  }
}

/**
 * registerBusMetrics adds the bus gauges of a service whose outbox is in `pool`'s schema, read
 * from the database at each scrape: the age of the oldest undelivered message per topic (lag) and
 * the dead messages per topic.
 */
export function registerBusMetrics(pool: Queryable): void {
  const read = async () => {
    const { rows } = await pool.query<{ topic: string; lag_seconds: number | null; dead: number }>(
      `SELECT topic,
              extract(epoch FROM now() - min(created_at) FILTER (WHERE status IN ('pending', 'running')))::float8
                AS lag_seconds,
              (count(*) FILTER (WHERE status = 'dead'))::int AS dead
         FROM bus_outbox
        WHERE status IN ('pending', 'running', 'dead')
        GROUP BY topic`,
    );
    return rows;
  };
  new Gauge({
    name: 'adsmcp_bus_lag_seconds',
    help: 'Age of the oldest pending (undelivered or running) outbox message, by topic; 0 when none is pending.',
    labelNames: ['topic'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const r of await read()) this.set({ topic: r.topic }, Math.max(0, r.lag_seconds ?? 0));
    },
  });
  new Gauge({
    name: 'adsmcp_bus_dead_letters',
    help: 'Messages parked as dead after failing every attempt, by topic.',
    labelNames: ['topic'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      this.set(0);
      for (const r of await read()) if (r.dead > 0) this.set({ topic: r.topic }, r.dead);
    },
  });
}

export { Counter, Gauge, Histogram };

/** `METRICS_PORT`: undefined (off), or a port from 0 (ephemeral) to 65535. */
export function metricsPort(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const raw = env.METRICS_PORT?.trim();
  if (raw === undefined || raw === '') return undefined;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(`METRICS_PORT must be an integer from 0 to 65535 (got "${raw}")`);
  }
  return port;
}

export interface MetricsServer {
  /** The bound port, or undefined when metrics are not served. */
  port: number | undefined;
  close(): Promise<void>;
}

/**
 * startMetrics labels the registry with `service`, collects the process's default metrics
 * (CPU, memory, event loop lag, GC), and serves `GET /metrics` on `METRICS_PORT` at `host` when
 * that is set.
 */
export async function startMetrics(
  service: string,
  opts: { host: string; logger: Logger; env?: NodeJS.ProcessEnv },
): Promise<MetricsServer> {
  const port = metricsPort(opts.env);
  registry.setDefaultLabels({ service });
  if (port === undefined) return { port: undefined, close: async () => {} };
  collectDefaultMetrics({ register: registry });
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res
        .writeHead(404, { 'content-type': 'text/plain' })
        .end('not found: GET /metrics serves the metrics\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (err: unknown) => {
        opts.logger.warn({ err }, 'metrics scrape failed');
        res.writeHead(503, { 'content-type': 'text/plain' }).end('metrics unavailable; try again\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  opts.logger.info({ metrics_port: bound }, 'metrics listening');
  return {
    port: bound,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
