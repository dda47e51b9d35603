/**
 * `npm start`: everything on this machine. An embedded PostgreSQL under .data/pg (or
 * DATABASE_URL), the sandbox ad platform, every service as its own process with prefixed logs,
 * a seeded demo workspace, and the MCP URL, a token and the dashboard sign-in printed and
 * written to .data/dev.json. A service or the PostgreSQL server that exits unexpectedly is logged
 * and restarted on its port, after a wait that grows while it keeps crashing; while PostgreSQL is
 * down, a service that exits waits for it. Ctrl-C (or SIGTERM) drains the services, then stops
 * PostgreSQL; the next start reuses the data. Should this process be killed outright, what it
 * started stops too. A second start while a stack runs from this checkout is refused, naming it
 * (`npm start -- --replace` stops it first). With `KAFKA_BROKERS=host:port,...` the services'
 * bus runs on Kafka instead of the PostgreSQL queue.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { inspect, parseArgs } from 'node:util';
import { busTransportKind } from '@adsmcp/runtime/bus/transport';
import { ensureBundles } from '@adsmcp/testkit/bundles';
import {
  isRunning,
  postgresRunningOn,
  type RunningPostgres,
  startEmbeddedPostgres,
} from '@adsmcp/testkit/embedded-postgres';
import { DEFAULT_RESTART_POLICY } from '@adsmcp/testkit/restart-backoff';
import { REPO_ROOT, type ServiceName, type Stack, startStack } from '@adsmcp/testkit/stack';
import pg from 'pg';

const DATA_DIR = join(REPO_ROOT, '.data');
const DEV_FILE = join(DATA_DIR, 'dev.json');
const PG_DIR = join(DATA_DIR, 'pg');
/** What runs from this checkout, while it runs: the lock that a second start finds. */
const STACK_FILE = join(DATA_DIR, 'npm-start.json');
const DATABASE = 'adsmcp';
/** A service's drain time on SIGTERM (onShutdown's, in packages/runtime/src/lifecycle.ts). */
const DRAIN_MS = 20_000;
/** How this process shows in its command line (`node --import tsx scripts/start.ts`). */
const COMMAND = 'scripts/start.ts';
const SERVICES: readonly ServiceName[] = [
  'gateway',
  'changes',
  'optimizer',
  'marketing',
  'upstream-proxy',
  'ads-sandbox',
];

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

/** Whose line it is: a service's, or the supervisor's about PostgreSQL. */
type Tag = ServiceName | 'postgres';

const COLORS: Record<Tag, string> = {
  gateway: '36',
  changes: '33',
  optimizer: '35',
  marketing: '32',
  'upstream-proxy': '34',
  'ads-sandbox': '90',
  postgres: '94',
};
const WIDTH = Math.max(...Object.keys(COLORS).map((s) => s.length));
const tty = process.stdout.isTTY;

/**
 * The time a line is stamped with (UTC, to the millisecond, `10:42:01.123Z`): the service's own
 * `time` when its JSON line has one (when it logged, not when we read it), else now.
 */
function stampOf(time: unknown): string {
  const at = typeof time === 'number' || typeof time === 'string' ? new Date(time) : new Date();
  return (Number.isNaN(at.getTime()) ? new Date() : at).toISOString().slice(11);
}

function printLine(service: Tag, line: string): void {
  const tag = service.padEnd(WIDTH);
  let text = line;
  let time: unknown;
  if (line.startsWith('{')) {
    try {
      const j = JSON.parse(line) as Record<string, unknown>;
      const { level, msg, time: t, service: _s, ...rest } = j;
      time = t;
      const extra = Object.keys(rest).length > 0 ? ` ${JSON.stringify(rest)}` : '';
      text = `${String(level ?? '').padEnd(5)} ${String(msg ?? '')}${extra}`;
    } catch {
      // print as is
    }
  }
  const stamp = stampOf(time);
  process.stdout.write(
    tty ? `${stamp} \x1b[${COLORS[service]}m${tag}\x1b[0m | ${text}\n` : `${stamp} ${tag} | ${text}\n`,
  );
}

/** What the supervisor did to a service, set apart from the service's own lines. */
function printNotice(service: Tag, message: string): void {
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

/**
 * Why a start failed, in words, whatever was thrown: an Error's message (and its cause), each
 * error of an AggregateError (a refused connection is one, with an empty message of its own),
 * a string, or any other value as Node shows it; never a bare "undefined".
 */
export function describeFailure(err: unknown): string {
  if (err instanceof AggregateError) {
    const parts = [err.message, ...err.errors.map(describeFailure)].filter((m) => m !== '');
    return parts.length > 0 ? parts.join('; ') : 'several steps failed without saying why';
  }
  if (err instanceof Error) {
    const frame = err.stack?.split('\n')[1]?.trim().replace(/^at /, '');
    const text =
      err.message !== ''
        ? err.message
        : `${err.name} without a message${frame ? `, thrown at ${frame}` : ''}`;
    return err.cause === undefined ? text : `${text} (because: ${describeFailure(err.cause)})`;
  }
  if (typeof err === 'string') return err !== '' ? err : 'a step failed with an empty message';
  if (err === undefined || err === null) return `a step failed without saying why (it threw ${err})`;
  return inspect(err, { depth: 4, breakLength: Number.POSITIVE_INFINITY });
}

/** What runs from this checkout, as STACK_FILE records it (each pid with a part of its command line). */
interface StackRecord {
  pid: number;
  command: string;
  startedAt: string;
  drainMs: number;
  watchdogPid?: number;
  postgres: { pid: number; port: number; dataDir: string } | null;
  services: { name: ServiceName; pid: number; port: number; command: string }[];
}

/**
 * The watchdog, run as `node -e` beside the supervisor: when the supervisor dies, however (its
 * IPC channel to this process ends, even on SIGKILL), it stops what STACK_FILE lists, in the
 * order Ctrl-C does: the services with SIGTERM and their drain time, then PostgreSQL with a fast
 * shutdown. Started without a channel, it does so at once (`npm start -- --replace` over a stack
 * whose supervisor is gone). The services also stop on their own when the channel to the
 * supervisor ends (exitWithParent), but PostgreSQL has no such hook, and a process has to stop
 * it. A separate process, not a child of PostgreSQL's, because only one that outlives the
 * supervisor can act on its death; plain JavaScript, so that it starts in a moment and holds
 * little memory while it waits.
 */
const WATCHDOG = `
const fs = require('node:fs');
const file = process.argv[1];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const runs = (pid, part) => {
  if (!(pid > 0)) return false;
  try { process.kill(pid, 0); } catch (e) { return e.code === 'EPERM'; }
  if (!fs.existsSync('/proc/self/cmdline')) return true;
  try { return fs.readFileSync('/proc/' + pid + '/cmdline', 'utf8').includes(part); } catch { return false; }
};
const signal = (pid, sig) => { try { process.kill(pid, sig); } catch {} };
const until = async (done, ms) => {
  for (const end = Date.now() + ms; !done() && Date.now() < end; ) await sleep(100);
  return done();
};
async function stopStack() {
  let stack;
  try { stack = JSON.parse(fs.readFileSync(file, 'utf8')); } catch { return; }
  const services = stack.services.filter((s) => runs(s.pid, s.command));
  const serving = () => services.filter((s) => runs(s.pid, s.command));
  for (const s of services) signal(s.pid, 'SIGTERM');
  if (!(await until(() => serving().length === 0, stack.drainMs + 5000)))
    for (const s of serving()) signal(s.pid, 'SIGKILL');
  if (stack.postgres) {
    const dir = stack.postgres.dataDir;
    let pid = stack.postgres.pid;
    try { pid = Number(fs.readFileSync(dir + '/postmaster.pid', 'utf8').split('\\n')[0]) || pid; } catch {}
    const up = () => runs(pid, dir);
    if (up()) {
      signal(pid, 'SIGINT');
      if (!(await until(() => !up(), 30000))) { signal(pid, 'SIGQUIT'); await until(() => !up(), 5000); }
    }
  }
  if (!runs(stack.pid, stack.command)) fs.rmSync(file, { force: true });
}
const done = () => stopStack().finally(() => process.exit(0));
if (typeof process.send === 'function') process.once('disconnect', done);
else done();
`;

async function readRecord(): Promise<StackRecord | undefined> {
  const text = await readFile(STACK_FILE, 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  try {
    const record = JSON.parse(text) as Partial<StackRecord> | null;
    if (typeof record?.pid !== 'number' || !Array.isArray(record.services)) return undefined;
    return record as StackRecord;
  } catch {
    return undefined; // not ours to read (a half-written file is never left: it is renamed into place)
  }
}

/** What still runs of a stack started from this checkout, and whether its npm start does. */
interface FoundStack {
  record: StackRecord | undefined;
  supervisorRuns: boolean;
  running: { name: string; pid: number; port: number | undefined; note?: string }[];
}

async function findStack(): Promise<FoundStack | undefined> {
  const record = await readRecord();
  const supervisorRuns = record !== undefined && isRunning(record.pid, record.command);
  const running: FoundStack['running'] = [];
  if (!process.env.DATABASE_URL || record?.postgres) {
    const server = await postgresRunningOn(PG_DIR);
    if (server) running.push({ name: 'PostgreSQL', ...server, note: `data in ${server.dataDir}` });
  }
  for (const s of record?.services ?? []) if (isRunning(s.pid, s.command)) running.push(s);
  return supervisorRuns || running.length > 0 ? { record, supervisorRuns, running } : undefined;
}

function describeStack(found: FoundStack): string {
  const width = Math.max(...found.running.map((p) => p.name.length));
  return found.running
    .map(
      (p) =>
        `  ${p.name.padEnd(width)}  pid ${p.pid}${p.port === undefined ? '' : `, port ${p.port}`}${p.note ? `, ${p.note}` : ''}`,
    )
    .join('\n');
}

/** The reason a start is refused: what runs, and how to stop it. */
function refusal(found: FoundStack): string {
  const list = found.running.length > 0 ? `\n${describeStack(found)}` : '';
  if (found.supervisorRuns && found.record) {
    const { pid, startedAt } = found.record;
    return (
      `a stack is already running from this checkout: npm start (pid ${pid}, since ${startedAt})${list}\n` +
      `Stop it first: Ctrl-C where it runs (or \`kill ${pid}\`), or run \`npm start -- --replace\` to stop it and start again.`
    );
  }
  const who = found.record
    ? `by an npm start of this checkout that is gone (pid ${found.record.pid})`
    : 'by an earlier start';
  return (
    `processes left running ${who} still hold its ports and data:${list}\n` +
    'Run `npm start -- --replace` to stop them and start again.'
  );
}

/** Runs the watchdog's stopping at once over what STACK_FILE lists, and waits for it. */
function stopRecorded(): Promise<void> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', WATCHDOG, STACK_FILE], { stdio: 'ignore' });
    child.on('exit', () => resolve());
    child.on('error', () => resolve());
  });
}

async function until(done: () => boolean, timeoutMs: number): Promise<boolean> {
  for (const end = Date.now() + timeoutMs; !done() && Date.now() < end; )
    await new Promise((r) => setTimeout(r, 100));
  return done();
}

/** `--replace`: stops what runs from this checkout, its npm start first (which drains it in order). */
async function replaceStack(found: FoundStack): Promise<void> {
  process.stdout.write(`replacing what runs from this checkout:\n${describeStack(found)}\n`);
  const { record } = found;
  if (found.supervisorRuns && record) {
    process.stdout.write(
      `stopping npm start (pid ${record.pid}): its services drain, then its PostgreSQL stops\n`,
    );
    process.kill(record.pid, 'SIGTERM');
    if (!(await until(() => !isRunning(record.pid, record.command), 2 * DRAIN_MS + 60_000)))
      process.kill(record.pid, 'SIGKILL');
  }
  const left = await findStack();
  if (left && left.running.length > 0) {
    // The record lists the services; a PostgreSQL found on the data directory is added to it.
    const server = left.running.find((p) => p.name === 'PostgreSQL');
    const base: StackRecord = left.record ?? {
      pid: 0,
      command: COMMAND,
      startedAt: '',
      drainMs: DRAIN_MS,
      postgres: null,
      services: [],
    };
    const postgres =
      server && server.port !== undefined && server.note
        ? { pid: server.pid, port: server.port, dataDir: server.note.replace(/^data in /, '') }
        : base.postgres;
    await writeRecord({ ...base, postgres });
    await stopRecorded();
  }
  const still = await findStack();
  if (still && still.running.length > 0)
    throw new Error(`could not stop what runs from this checkout:\n${describeStack(still)}`);
  await rm(STACK_FILE, { force: true });
  process.stdout.write('stopped it\n');
}

/** Writes STACK_FILE whole (a new file renamed over the old), so that no reader sees half of it. */
async function writeRecord(record: StackRecord): Promise<void> {
  const tmp = `${STACK_FILE}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  await rename(tmp, STACK_FILE);
}

/**
 * Makes this start the one that runs from this checkout: refused while another runs (or its
 * processes do), unless `replace`, which stops them first. A record whose processes are all
 * gone (a start killed with its watchdog) is taken over.
 */
async function claimCheckout(record: StackRecord, replace: boolean): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const found = await findStack();
    if (found) {
      if (!replace || attempt > 3) throw new Error(refusal(found));
      await replaceStack(found);
      continue;
    }
    try {
      await writeFile(STACK_FILE, `${JSON.stringify(record, null, 2)}\n`, { flag: 'wx', mode: 0o600 });
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 3) throw err;
      // Left by a stack that is gone, unless another start claimed the checkout meanwhile.
      if (!(await findStack())) await rm(STACK_FILE, { force: true });
    }
  }
}

/** Parses `npm start -- <flags>`: only `--replace`. */
function parseFlags(argv: string[]): { replace: boolean } {
  try {
    const { values } = parseArgs({ args: argv, options: { replace: { type: 'boolean' } }, strict: true });
    return { replace: values.replace === true };
  } catch (err) {
    throw new Error(
      `${(err as Error).message}. npm start takes one flag: --replace (stop the stack running from this checkout first), as \`npm start -- --replace\``,
    );
  }
}

type BusKind = ReturnType<typeof busTransportKind>;

/** The gateway's port: PORT, or 8080. */
function gatewayPort(): number {
  const port = Number(process.env.PORT ?? 8080);
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new Error(`PORT must be a port number from 1 to 65535 (got ${process.env.PORT})`);
  return port;
}

/**
 * The watchdog that stops what the record names should this process end without its orderly
 * stop. Detached: out of the terminal's process group, so Ctrl-C leaves it to see the orderly stop.
 */
function startWatchdog(): ChildProcess {
  const watchdog: ChildProcess = spawn(process.execPath, ['-e', WATCHDOG, STACK_FILE], {
    detached: true,
    stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
  });
  watchdog.unref();
  watchdog.channel?.unref();
  return watchdog;
}

/** Keeps STACK_FILE up to date with what this start runs: every change of a pid or port, one write after another. */
class StackRecorder {
  pgServer: RunningPostgres | undefined;
  stack: Stack | undefined;
  recording = Promise.resolve();
  private released = false;

  constructor(
    private readonly record: StackRecord,
    private readonly watchdog: ChildProcess,
  ) {}

  update(): void {
    this.recording = this.recording.then(async () => {
      if (this.released) return;
      const { record, pgServer, stack } = this;
      record.postgres = pgServer
        ? { pid: pgServer.pid, port: pgServer.port, dataDir: pgServer.dataDir }
        : null;
      record.services = stack
        ? SERVICES.map((name) => {
            const child = stack.process(name) as ChildProcess;
            return {
              name,
              pid: child.pid ?? 0,
              port: Number(new URL(stack.urls[name] ?? '').port),
              command: child.spawnargs.at(-1) ?? '',
            };
          })
        : [];
      await writeRecord(record).catch((err: unknown) =>
        process.stderr.write(`could not record the stack in ${STACK_FILE}: ${describeFailure(err)}\n`),
      );
    });
  }

  /** After an orderly stop: nothing runs, so the record goes and the watchdog has nothing to do. */
  async release(): Promise<void> {
    this.released = true;
    await rm(STACK_FILE, { force: true });
    this.watchdog.kill();
  }
}

/** The database the services use: DATABASE_URL, or one in an embedded PostgreSQL started here. */
async function startDatabase(recorder: StackRecorder): Promise<string> {
  const databaseUrl = process.env.DATABASE_URL;
  if (databaseUrl) return databaseUrl;
  process.stdout.write('starting embedded PostgreSQL\n');
  // fsync stays on: this database holds the user's data across starts.
  const server = await startEmbeddedPostgres({
    dataDir: PG_DIR,
    persistent: true,
    ownProcessGroup: true,
    supervise: DEFAULT_RESTART_POLICY,
    onSupervisor: (message) => {
      printNotice('postgres', message);
      recorder.update();
    },
  });
  recorder.pgServer = server;
  process.stdout.write(
    server.dataDir === PG_DIR
      ? 'embedded PostgreSQL: data in .data/pg\n'
      : `embedded PostgreSQL: data in ${server.dataDir} (the postgres user it runs as cannot enter this checkout)\n`,
  );
  printNotice('postgres', `started (pid ${server.pid}), accepting connections on port ${server.port}`);
  recorder.update();
  return ensureDatabase(server.adminUrl);
}

/** Starts every service, supervised; PostgreSQL started here is stopped again should that fail. */
async function startServices(
  recorder: StackRecorder,
  databaseUrl: string,
  port: number,
  bus: BusKind,
): Promise<Stack> {
  const { pgServer } = recorder;
  const stack = await startStack({
    databaseUrl,
    dataDir: DATA_DIR,
    gatewayPort: port,
    env: bus.kind === 'kafka' ? { KAFKA_BROKERS: bus.brokers.join(',') } : undefined,
    onLine: printLine,
    supervise: DEFAULT_RESTART_POLICY,
    onSupervisor: (service, message) => {
      printNotice(service, message);
      recorder.update();
    },
    // A service that exits while PostgreSQL is down would only crash again on start.
    restartWhen: () =>
      pgServer && !pgServer.up ? { waitingFor: 'PostgreSQL', ready: pgServer.whenUp() } : undefined,
  }).catch(async (err: unknown) => {
    await pgServer?.stop();
    throw err;
  });
  recorder.stack = stack;
  recorder.update();
  return stack;
}

/** Ctrl-C and SIGTERM drain the services, then stop PostgreSQL; an exit otherwise takes the services with it. */
function stopOnSignals(recorder: StackRecorder, running: Stack): void {
  let stopping = false;
  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`\n${signal}: stopping the services (each drains), then PostgreSQL\n`);
    await running.stop();
    const { pgServer } = recorder;
    if (pgServer) {
      printNotice('postgres', 'stopping (the services have stopped)');
      await pgServer.stop();
      printNotice('postgres', 'stopped');
    }
    await recorder.recording;
    await recorder.release();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  // The services run outside this process's group (Ctrl-C reaches only us): should this process
  // end without stopping them (an uncaught error), they go with it rather than hold their ports.
  process.on('exit', () => {
    for (const service of SERVICES) running.process(service).kill('SIGKILL');
  });
}

type Seed = Awaited<ReturnType<Stack['seedDemo']>>;

/** Writes .data/dev.json: where this stack is and how to sign in to it. */
async function writeDevFile(
  running: Stack,
  seed: Seed,
  previous: Partial<DevFile>,
  databaseUrl: string,
): Promise<DevFile> {
  const dev: DevFile = {
    mcpUrl: running.mcpUrl,
    token: seed.token,
    dashboardUrl: `${running.gatewayUrl}/dashboard`,
    dashboardUser: seed.dashboardUser,
    dashboardPassword: seed.dashboardPassword ?? previous.dashboardPassword ?? null,
    databaseUrl,
    services: {
      changesUrl: running.urls.changes,
      optimizerUrl: running.urls.optimizer,
      upstreamProxyUrl: running.urls['upstream-proxy'],
      sandboxUrl: running.urls['ads-sandbox'],
    },
  };
  await writeFile(DEV_FILE, `${JSON.stringify(dev, null, 2)}\n`, { mode: 0o600 });
  return dev;
}

function printReady(dev: DevFile, seed: Seed, bus: BusKind): void {
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

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2));
  await mkdir(DATA_DIR, { recursive: true });
  const port = gatewayPort();
  // Checked here, before anything starts, rather than by each service in turn.
  const bus = busTransportKind(process.env);
  const record: StackRecord = {
    pid: process.pid,
    command: COMMAND,
    startedAt: new Date().toISOString(),
    drainMs: DRAIN_MS,
    postgres: null,
    services: [],
  };
  await claimCheckout(record, flags.replace);
  const watchdog = startWatchdog();
  record.watchdogPid = watchdog.pid;
  const recorder = new StackRecorder(record, watchdog);
  recorder.update();
  await recorder.recording;

  // The services run from bundles of the current sources, built (after a change) while
  // PostgreSQL starts; a failed build is reported once PostgreSQL can be stopped again.
  const bundling = ensureBundles().catch((err: unknown) =>
    err instanceof Error ? err : new Error(describeFailure(err)),
  );
  const databaseUrl = await startDatabase(recorder);
  const bundles = await bundling;
  if (bundles instanceof Error) {
    await recorder.pgServer?.stop();
    throw new Error(`could not bundle the services: ${bundles.message}`);
  }
  if (bundles.built) process.stdout.write(`bundled the services in ${(bundles.ms / 1000).toFixed(1)} s\n`);

  const previous = existsSync(DEV_FILE)
    ? (JSON.parse(await readFile(DEV_FILE, 'utf8')) as Partial<DevFile>)
    : {};
  const running = await startServices(recorder, databaseUrl, port, bus);
  stopOnSignals(recorder, running);
  const seed = await running.seedDemo(previous.token);
  printReady(await writeDevFile(running, seed, previous, databaseUrl), seed, bus);
}

// Run as `npm start`, not when a test imports describeFailure. What a failed start had started
// (and recorded) is stopped by its watchdog once this process ends.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    process.stderr.write(`npm start failed: ${describeFailure(err)}\n`);
    process.exit(1);
  });
}
