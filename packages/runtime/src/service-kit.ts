/**
 * The start-up and shutdown every service shares, in the one order that works: configuration,
 * tracing (before any server is built: the Fastify instrumentation attaches to instances made
 * afterwards), the logger, metrics, the database and its migrations, the bus and its consumers,
 * periodic jobs, the server, listening, the `listening` line; and on SIGTERM or SIGINT the reverse:
 * the server first (no new calls), then the jobs, the consumers and the bus, the pool, metrics and
 * tracing. A service's main.ts is then a declaration of what is its own: its peers, consumers,
 * jobs and server (docs/architecture.md, "A service's main.ts").
 */
import type { AddressInfo } from 'node:net';
import type { BusTransport, Consumer, ConsumerOptions } from './bus/bus.ts';
import { migrateBus, startPruning } from './bus/outbox.ts';
import { createBusTransport } from './bus/transport.ts';
import { createPool, openServiceDatabase, type Pool, poolErrorsTo } from './db.ts';
import { announceListening, onShutdown, runMain } from './lifecycle.ts';
import { createLogger, type Logger } from './log.ts';
import { registerBusMetrics, startMetrics } from './metrics.ts';
import { createPrincipalVerifier, type PrincipalVerifier } from './principal.ts';
import { startQuietCollector } from './quiet-gc.ts';
import { startTracing } from './telemetry.ts';
import { type IssuerName, type ServiceName, TRUST_GRAPH, type Trust, trustedKeys } from './trust.ts';

const HOUR_MS = 60 * 60 * 1000;
/** Done bus messages and inbox records are kept a week: far beyond any redelivery window. */
const BUS_KEEP_MS = 7 * 24 * HOUR_MS;

/** What the kit reads of every service's configuration. */
export interface KitConfig {
  DATABASE_URL: string;
  PORT: number;
  HOST: string;
  /** Kafka when set, else the PostgreSQL queue on the outbox table (bus/transport.ts). */
  KAFKA_BROKERS?: string | undefined;
  PRINCIPAL_PUBLIC_KEY?: string | undefined;
  CHANGES_PUBLIC_KEY?: string | undefined;
  OPTIMIZER_PUBLIC_KEY?: string | undefined;
}

/** What every step after the database gets. `bus` is there when the service declared one. */
export interface ServiceDeps<C, B extends boolean> {
  config: C;
  logger: Logger;
  pool: Pool;
  /** The pool of generic plans, when the spec's `database.genericPlans` asks for one. */
  genericPlans: Pool | undefined;
  bus: B extends true ? BusTransport : undefined;
  /** Verifies principal tokens by the trust table's edges for this service. */
  verifier: PrincipalVerifier;
}

/** The deps, with what the service's `peers` step made. */
export type ServiceDepsWith<C, B extends boolean, P> = ServiceDeps<C, B> & { peers: P };

/** A server the kit starts and stops: a Connect server as it is, an HTTP one through `httpServer`. */
export interface ServiceServer {
  /** Starts listening; resolves with the bound port. */
  listen(port: number, host: string): Promise<number>;
  /** Stops taking calls and lets those under way finish. */
  close(): Promise<void>;
}

/** A job that runs until stopped: the stop function, or an object with one. */
export type RunningJob = (() => Promise<void>) | { stop(): Promise<void> };

/** A consumer to start on the service's bus (see `consume`). */
export interface DeclaredConsumer {
  readonly name: string;
  start(bus: BusTransport): Promise<Consumer>;
}

/**
 * consume declares a consumer for `startService`; the payload type stays the handler's own (a
 * list of ConsumerOptions of different payloads would need a cast at each).
 */
export function consume<P>(options: ConsumerOptions<P>): DeclaredConsumer {
  return { name: options.name, start: (bus) => bus.consume<P>(options) };
}

export interface ServiceSpec<C extends KitConfig, B extends boolean, P> {
  /** The service's name: its logs, metrics and traces, and the audience of the tokens it verifies. */
  name: ServiceName;
  /** Reads the configuration (throwing a ConfigError naming what is wrong). */
  config: () => C;
  database: {
    /** The service's PostgreSQL schema; its name when unset. */
    schema?: string;
    migrationsDir: string;
    /** Pool size (default 10). */
    max?: number;
    /**
     * The size of a second pool whose connections plan each statement once (createPool's
     * `genericPlans`), for the statements the service sends there by name; none when unset.
     */
    genericPlans?: number;
    /** The service has a bus (its tables in the schema, consumers, pruning of done messages). */
    bus?: B;
  };
  /**
   * The issuers whose principal tokens the service accepts. The trust table (trust.ts) says on
   * which channels, with which scopes and under which key; this list must name the same issuers,
   * so that main.ts shows who may call the service and the table stays the one authority.
   */
  trusts: readonly IssuerName[];
  /** Clients of the services this one calls, and anything else its consumers, jobs and server share. */
  peers?: (deps: ServiceDeps<C, B>) => P | Promise<P>;
  /** Consumers started on the bus before the server listens; stopped with the bus. */
  consumers?: (deps: ServiceDepsWith<C, B, P>) => readonly DeclaredConsumer[];
  /** Periodic jobs, started before the server listens and stopped after it, latest first. */
  jobs?: (deps: ServiceDepsWith<C, B, P>) => readonly (RunningJob | Promise<RunningJob>)[];
  /** Builds the server (not yet listening). */
  server: (deps: ServiceDepsWith<C, B, P>) => ServiceServer | Promise<ServiceServer>;
  /** More fields for the `listening` line (the gateway's MCP URL). */
  announce?: (deps: ServiceDepsWith<C, B, P>) => Record<string, unknown>;
}

/**
 * startService runs a service's process: the shared wiring in order, the service's own parts where
 * `spec` puts them, a start-up failure printed and exit 1 (runMain), and the reverse on shutdown.
 */
export function startService<C extends KitConfig, B extends boolean = false, P = undefined>(
  spec: ServiceSpec<C, B, P>,
): void {
  runMain(spec.name, () => run(spec));
}

async function run<C extends KitConfig, B extends boolean, P>(spec: ServiceSpec<C, B, P>): Promise<void> {
  const { name } = spec;
  const config = spec.config();
  checkTrusts(name, spec.trusts);
  const tracing = await startTracing(name);
  const logger = createLogger(name);
  const metrics = await startMetrics(name, { host: config.HOST, logger });
  const schema = spec.database.schema ?? name;
  const pool = await openServiceDatabase({
    url: config.DATABASE_URL,
    schema,
    migrationsDir: spec.database.migrationsDir,
    logger,
    ...(spec.database.max === undefined ? {} : { max: spec.database.max }),
  });
  let bus: BusTransport | undefined;
  if (spec.database.bus === true) {
    await migrateBus(pool, schema);
    registerBusMetrics(pool);
    bus = createBusTransport({ pool, logger, env: config, clientId: name });
  }
  const genericPlans =
    spec.database.genericPlans === undefined
      ? undefined
      : createPool(config.DATABASE_URL, schema, spec.database.genericPlans, poolErrorsTo(logger), {
          genericPlans: true,
        });
  const verifier = await createPrincipalVerifier(trustedKeys(name, config), name);
  // `bus` is set exactly when the spec said bus: true, which is what B says.
  const base = { config, logger, pool, genericPlans, bus, verifier } as ServiceDeps<C, B>;
  const peers = (await spec.peers?.(base)) as P;
  const deps: ServiceDepsWith<C, B, P> = { ...base, peers };
  const consumers = spec.consumers?.(deps) ?? [];
  if (consumers.length > 0 && bus === undefined)
    throw new Error(`${name} declares consumers (${consumers.map((c) => c.name).join(', ')}) but no bus`);
  for (const c of consumers) await c.start(bus as BusTransport);
  const jobs: RunningJob[] = [];
  for (const job of spec.jobs?.(deps) ?? []) jobs.push(await job);
  if (bus !== undefined)
    jobs.push(startPruning({ pool, logger, everyMs: HOUR_MS, olderThanMs: BUS_KEEP_MS }));
  // A burst's heap given back once the process falls quiet (quiet-gc.ts).
  jobs.push(startQuietCollector({ logger }));
  const server = await spec.server(deps);
  const port = await server.listen(config.PORT, config.HOST);
  announceListening(name, port, { ...spec.announce?.(deps), metrics_port: metrics.port });
  onShutdown(logger, async () => {
    await server.close();
    for (const job of jobs.reverse()) await (typeof job === 'function' ? job() : job.stop());
    await bus?.stop();
    await genericPlans?.end();
    await pool.end();
    await metrics.close();
    await tracing.shutdown();
  });
}

/**
 * Checks what a main.ts declares it trusts against the trust table's edges for `service`: the same
 * issuers, or the service does not start (a main.ts and the table that disagree is a mistake in
 * one of them, and the table is what the verifier follows).
 */
function checkTrusts(service: ServiceName, declared: readonly IssuerName[]): void {
  const edges: readonly Trust[] = TRUST_GRAPH[service];
  const table = [...new Set(edges.map((e) => e.issuer))].sort();
  const named = [...declared].sort();
  if (table.join() !== named.join()) {
    throw new Error(
      `${service} declares it trusts [${named.join(', ')}] but the trust table (packages/runtime/src/trust.ts) says [${table.join(', ')}]`,
    );
  }
}

/** What `httpServer` needs of an HTTP framework's app (Fastify's, structurally). */
export interface HttpApp {
  listen(options: { port: number; host: string }): Promise<unknown>;
  close(): PromiseLike<unknown>;
  readonly server: { address(): AddressInfo | string | null };
}

/**
 * httpServer adapts an HTTP app (the gateway's and the sandbox's Fastify) to the kit's server;
 * `beforeClose` runs first on shutdown (the gateway drains its MCP streams there).
 */
export function httpServer(app: HttpApp, beforeClose?: () => Promise<void>): ServiceServer {
  return {
    async listen(port, host) {
      await app.listen({ port, host });
      const address = app.server.address();
      if (address === null || typeof address === 'string')
        throw new Error(`listening on ${host}:${port} gave no TCP address`);
      return address.port;
    },
    async close() {
      await beforeClose?.();
      await app.close();
    },
  };
}
