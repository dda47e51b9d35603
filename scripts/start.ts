/**
 * `npm start`: everything on this machine. An embedded PostgreSQL under .data/pg (or
 * DATABASE_URL), the sandbox ad platform, every service as its own process with prefixed logs,
 * a seeded demo workspace, and the MCP URL, a token and the dashboard sign-in printed and
 * written to .data/dev.json. A service that exits unexpectedly is logged and restarted on its
 * port, after a wait that grows while it keeps crashing. Ctrl-C stops everything; the next
 * start reuses the data. With `KAFKA_BROKERS=host:port,...` the services' bus runs on Kafka
 * instead of the PostgreSQL queue.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { busTransportKind } from '@adsmcp/runtime/bus/transport';
import { ensureBundles } from '@adsmcp/testkit/bundles';
import { startEmbeddedPostgres } from '@adsmcp/testkit/embedded-postgres';
import { DEFAULT_RESTART_POLICY } from '@adsmcp/testkit/restart-backoff';
import { REPO_ROOT, type ServiceName, startStack } from '@adsmcp/testkit/stack';
import pg from 'pg';

const DATA_DIR = join(REPO_ROOT, '.data');
const DEV_FILE = join(DATA_DIR, 'dev.json');
const DATABASE = 'adsmcp';

interface DevFile {
  mcpUrl: string;
  token: string;
  dashboardUrl: string;
  dashboardUser: string;
  dashboardPassword: string | null;
  databaseUrl: string;
  /** Where `npm run admin` finds the services of this stack (its keys are in secrets.json). */
  services: { changesUrl: string; optimizerUrl: string; upstreamProxyUrl: string; sandboxUrl: string };
}

const COLORS: Record<ServiceName, string> = {
  gateway: '36',
  changes: '33',
  optimizer: '35',
  marketing: '32',
  'upstream-proxy': '34',
  'ads-sandbox': '90',
};
const WIDTH = Math.max(...Object.keys(COLORS).map((s) => s.length));
const tty = process.stdout.isTTY;

function printLine(service: ServiceName, line: string): void {
  const tag = service.padEnd(WIDTH);
  let text = line;
  if (line.startsWith('{')) {
    try {
      const j = JSON.parse(line) as Record<string, unknown>;
      const { level, msg, time: _t, service: _s, ...rest } = j;
      const extra = Object.keys(rest).length > 0 ? ` ${JSON.stringify(rest)}` : '';
      text = `${String(level ?? '').padEnd(5)} ${String(msg ?? '')}${extra}`;
    } catch {
      // print as is
    }
  }
  process.stdout.write(tty ? `\x1b[${COLORS[service]}m${tag}\x1b[0m | ${text}\n` : `${tag} | ${text}\n`);
}

/** What the supervisor did to a service, set apart from the service's own lines. */
function printNotice(service: ServiceName, message: string): void {
  printLine(service, tty ? `\x1b[1m[npm start] ${message}\x1b[0m` : `[npm start] ${message}`);
}

async function ensureDatabase(adminUrl: string): Promise<string> {
  const c = new pg.Client({ connectionString: adminUrl });
  await c.connect();
  try {
    const { rowCount } = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    if (rowCount === 0) await c.query(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await c.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${DATABASE}`;
  return url.toString();
}

async function main(): Promise<void> {
  await mkdir(DATA_DIR, { recursive: true });
  const port = Number(process.env.PORT ?? 8080);
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new Error(`PORT must be a port number (got ${process.env.PORT})`);
  // Checked here, before anything starts, rather than by each service in turn.
  const bus = busTransportKind(process.env);
  // The services run from bundles of the current sources, built (after a change) while
  // PostgreSQL starts; a failed build is reported once PostgreSQL can be stopped again.
  const bundling = ensureBundles().catch((err: unknown) =>
    err instanceof Error ? err : new Error(String(err)),
  );

  let stopPostgres: (() => Promise<void>) | undefined;
  let databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) {
    process.stdout.write('starting embedded PostgreSQL\n');
    // fsync stays on: this database holds the user's data across starts.
    const pgServer = await startEmbeddedPostgres({ dataDir: join(DATA_DIR, 'pg'), persistent: true });
    process.stdout.write(
      pgServer.dataDir === join(DATA_DIR, 'pg')
        ? 'embedded PostgreSQL: data in .data/pg\n'
        : `embedded PostgreSQL: data in ${pgServer.dataDir} (the postgres user it runs as cannot enter this checkout)\n`,
    );
    stopPostgres = () => pgServer.stop();
    databaseUrl = await ensureDatabase(pgServer.adminUrl);
  }

  const bundles = await bundling;
  if (bundles instanceof Error) {
    await stopPostgres?.();
    throw new Error(`could not bundle the services: ${bundles.message}`);
  }
  if (bundles.built) process.stdout.write(`bundled the services in ${(bundles.ms / 1000).toFixed(1)} s\n`);

  const previous = existsSync(DEV_FILE)
    ? (JSON.parse(await readFile(DEV_FILE, 'utf8')) as Partial<DevFile>)
    : {};
  const stack = await startStack({
    databaseUrl,
    dataDir: DATA_DIR,
    gatewayPort: port,
    env: bus.kind === 'kafka' ? { KAFKA_BROKERS: bus.brokers.join(',') } : undefined,
    onLine: printLine,
    supervise: DEFAULT_RESTART_POLICY,
    onSupervisor: printNotice,
  }).catch(async (err: unknown) => {
    await stopPostgres?.();
    throw err;
  });
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    process.stdout.write('\nstopping…\n');
    await stack.stop();
    await stopPostgres?.();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
  // The services run outside this process's group (Ctrl-C reaches only us): should this process
  // die without stopping them, they go with it rather than hold their ports.
  process.on('exit', () => {
    for (const service of Object.keys(COLORS) as ServiceName[]) stack.process(service).kill('SIGKILL');
  });

  const seed = await stack.seedDemo(previous.token);
  const dev: DevFile = {
    mcpUrl: stack.mcpUrl,
    token: seed.token,
    dashboardUrl: `${stack.gatewayUrl}/dashboard`,
    dashboardUser: seed.dashboardUser,
    dashboardPassword: seed.dashboardPassword ?? previous.dashboardPassword ?? null,
    databaseUrl,
    services: {
      changesUrl: stack.urls.changes,
      optimizerUrl: stack.urls.optimizer,
      upstreamProxyUrl: stack.urls['upstream-proxy'],
      sandboxUrl: stack.urls['ads-sandbox'],
    },
  };
  await writeFile(DEV_FILE, `${JSON.stringify(dev, null, 2)}\n`, { mode: 0o600 });
  process.stdout.write(
    [
      '',
      'Ready.',
      `  MCP URL:         ${dev.mcpUrl}`,
      `  MCP token:       ${dev.token}`,
      `  Dashboard:       ${dev.dashboardUrl}`,
      `  Sign in as:      ${dev.dashboardUser} / ${dev.dashboardPassword ?? '(password from the first start; see .data/dev.json)'}`,
      `  Ad accounts:     ${seed.accounts.map((a) => `${a.name} ${a.account_id}`).join(', ')}`,
      `  Bus:             ${bus.kind === 'kafka' ? `Kafka at ${bus.brokers.join(',')}` : 'PostgreSQL queue (set KAFKA_BROKERS for Kafka)'}`,
      `  Written to:      .data/dev.json`,
      '  Ctrl-C stops everything.',
      '',
    ].join('\n'),
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`npm start failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
