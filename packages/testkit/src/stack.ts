/**
 * The whole product as real processes on this machine: the sandbox, the upstream-proxy, the
 * domain services and the gateway, each started from its esbuild bundle (built once for the
 * current sources, see bundles.ts) on loopback, all at once on ports chosen beforehand.
 * `npm start`, the end-to-end tests and the benchmarks all start it this way.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatePrincipalKeys } from '@adsmcp/runtime/principal';
import { bundledEntry, ensureBundles } from './bundles.ts';
import { formatDelay, type RestartPolicy, restartDelay } from './restart-backoff.ts';

export const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));

export type ServiceName =
  | 'ads-sandbox'
  | 'upstream-proxy'
  | 'changes'
  | 'optimizer'
  | 'marketing'
  | 'gateway';
const DOMAIN_SERVICES = ['changes', 'optimizer', 'marketing'] as const;

export interface StackSecrets {
  principalPrivateKey: string;
  principalPublicKey: string;
  /** The changes service's own key: its worker signs the calls that apply approved changes. */
  changesPrivateKey: string;
  changesPublicKey: string;
  /** The optimizer's own key: its worker signs the calls that publish approved proposals. */
  optimizerPrivateKey: string;
  optimizerPublicKey: string;
  upstreamCredentialKey: string;
  sandboxAdminToken: string;
}

export interface SeedResult {
  workspaceId: string;
  dashboardUser: string;
  dashboardPassword: string | null;
  token: string;
  credentialId: string;
  accounts: { account_id: string; name: string; currency: string; upstream_account_id: string }[];
}

export interface StackOptions {
  /** A database the services may create their schemas in. */
  databaseUrl: string;
  /** Where the stack's secrets are kept (created on first use). */
  dataDir: string;
  gatewayPort?: number;
  /** Extra environment for every process (e.g. MCP_RATE_PER_SECOND for a benchmark). */
  env?: Record<string, string>;
  /** Each output line of each process. */
  onLine?: (service: ServiceName, line: string) => void;
  /** Extra Node.js arguments for every process (e.g. --cpu-prof for a benchmark). */
  nodeArgs?: string[];
  /**
   * Restart a process that exits unexpectedly (after start-up, outside `kill` and `stop`), on the
   * port it had, after a wait that grows while it keeps crashing. `npm start` supervises; tests
   * that kill processes on purpose do not.
   */
  supervise?: RestartPolicy;
  /** What the supervisor did: a process exited unexpectedly, was restarted, listens again. */
  onSupervisor?: (service: ServiceName, message: string) => void;
}

export interface Stack {
  gatewayUrl: string;
  mcpUrl: string;
  urls: Record<ServiceName, string>;
  secrets: StackSecrets;
  /** Env for `npm run admin` against this stack. */
  adminEnv: Record<string, string>;
  /** The last lines each process printed, for diagnosing a failed test. */
  recentOutput(service: ServiceName): string[];
  /** Runs `seed-demo` and returns what it printed. */
  seedDemo(existingToken?: string): Promise<SeedResult>;
  /** Runs the admin command with `args`; resolves with its stdout, rejects with its stderr. */
  admin(args: string[]): Promise<string>;
  /** The service's current process (a new one after each restart). */
  process(service: ServiceName): ChildProcess;
  /**
   * Kills a process with `signal` and waits for it to exit (SIGKILL: no drain, as a crash). It
   * stays stopped, even when supervised, until `restart`.
   */
  kill(service: ServiceName, signal: NodeJS.Signals): Promise<void>;
  /** Starts a stopped process again on the port it had, so its peers reach it unchanged. */
  restart(service: ServiceName): Promise<void>;
  /** Stops every process, gateway first; resolves with each one's exit code. */
  stop(): Promise<Partial<Record<ServiceName, number | null>>>;
}

/** loadSecrets reads the stack's keys from `dataDir/secrets.json`, creating any that are missing. */
export async function loadSecrets(dataDir: string): Promise<StackSecrets> {
  const file = join(dataDir, 'secrets.json');
  const saved: Partial<StackSecrets> = existsSync(file) ? JSON.parse(await readFile(file, 'utf8')) : {};
  const secrets = { ...saved };
  if (!secrets.principalPrivateKey || !secrets.principalPublicKey) {
    const keys = await generatePrincipalKeys();
    secrets.principalPrivateKey = keys.privateKeyPem;
    secrets.principalPublicKey = keys.publicKeyPem;
  }
  if (!secrets.changesPrivateKey || !secrets.changesPublicKey) {
    const keys = await generatePrincipalKeys();
    secrets.changesPrivateKey = keys.privateKeyPem;
    secrets.changesPublicKey = keys.publicKeyPem;
  }
  if (!secrets.optimizerPrivateKey || !secrets.optimizerPublicKey) {
    const keys = await generatePrincipalKeys();
    secrets.optimizerPrivateKey = keys.privateKeyPem;
    secrets.optimizerPublicKey = keys.publicKeyPem;
  }
  secrets.upstreamCredentialKey ??= randomBytes(32).toString('base64');
  secrets.sandboxAdminToken ??= randomBytes(24).toString('base64url');
  if (JSON.stringify(secrets) !== JSON.stringify(saved)) {
    await mkdir(dataDir, { recursive: true });
    await writeFile(file, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  }
  return secrets as StackSecrets;
}

interface Running {
  child: ChildProcess;
  lines: string[];
  exited: Promise<number | null>;
  startedAt: number;
}

const KEEP_LINES = 200;

/** Node's arguments for a bundled script: stack traces point at the TypeScript sources. */
function nodeArgs(script: string, extra: string[] = []): string[] {
  return [...extra, '--enable-source-maps', script];
}

function run(service: ServiceName, script: string, env: Record<string, string>, opts: StackOptions): Running {
  const child = spawn(process.execPath, nodeArgs(script, opts.nodeArgs), {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    // A supervised stack's processes are out of the terminal's process group: Ctrl-C reaches only
    // the supervisor, which stops them in order instead of seeing them all die at once.
    detached: opts.supervise !== undefined,
  });
  const onLine = opts.onLine;
  const lines: string[] = [];
  const take = (chunk: Buffer, carry: { rest: string }) => {
    const parts = (carry.rest + chunk.toString('utf8')).split('\n');
    carry.rest = parts.pop() ?? '';
    for (const line of parts) {
      lines.push(line);
      if (lines.length > KEEP_LINES) lines.shift();
      onLine?.(service, line);
      child.emit('line', line);
    }
  };
  const out = { rest: '' };
  const err = { rest: '' };
  child.stdout?.on('data', (c: Buffer) => take(c, out));
  child.stderr?.on('data', (c: Buffer) => take(c, err));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, lines, exited, startedAt: Date.now() };
}

/** Resolves with the port a service logs in its `listening` line. */
function listening(service: ServiceName, r: Running, timeoutMs = 60_000): Promise<number> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`${service} did not start in ${timeoutMs} ms:\n${r.lines.slice(-20).join('\n')}`));
    }, timeoutMs);
    const onLine = (line: string) => {
      if (!line.startsWith('{')) return;
      try {
        const j = JSON.parse(line) as { msg?: string; port?: number };
        if (j.msg === 'listening' && typeof j.port === 'number') {
          clearTimeout(timer);
          r.child.off('line', onLine);
          resolve(j.port);
        }
      } catch {
        // not a log line
      }
    };
    r.child.on('line', onLine);
    void r.exited.then((code) => {
      clearTimeout(timer);
      reject(
        new Error(`${service} exited (code ${code}) before listening:\n${r.lines.slice(-20).join('\n')}`),
      );
    });
  });
}

async function stopProcess(r: Running, graceMs = 15_000): Promise<number | null> {
  if (r.child.exitCode === null && r.child.signalCode === null) {
    r.child.kill('SIGTERM');
    const timer = setTimeout(() => r.child.kill('SIGKILL'), graceMs);
    await r.exited;
    clearTimeout(timer);
  }
  return r.exited;
}

function describeExit(child: ChildProcess): string {
  return child.signalCode ? `signal ${child.signalCode}` : `exit code ${child.exitCode}`;
}

/** One service under the stack: how it is started, its current process, and its restart state. */
interface Slot {
  env: Record<string, string>;
  running: Running;
  /** Stopped on purpose (kill, stop): its exit is not a crash. */
  held: boolean;
  /** The wait before the current run, when it was a restart. */
  lastDelayMs?: number;
  timer?: NodeJS.Timeout;
}

const METRICS_ORDER: readonly ServiceName[] = [
  'gateway',
  'changes',
  'optimizer',
  'marketing',
  'upstream-proxy',
  'ads-sandbox',
];

/**
 * The METRICS_PORT of one process of a stack on one machine: a fixed port N gives the gateway N,
 * the changes service N+1, and so on in METRICS_ORDER, so that they do not collide; 0 (ephemeral)
 * and unset pass through as they are.
 */
function metricsPortEnv(service: ServiceName, raw: string | undefined): Record<string, string> {
  const n = Number(raw);
  if (raw === undefined || raw.trim() === '' || !Number.isInteger(n) || n <= 0) return {};
  return { METRICS_PORT: String(n + METRICS_ORDER.indexOf(service)) };
}

/**
 * `n` distinct free loopback ports: the kernel's choice for each, all held open together so that
 * none is given twice, then released for the processes to listen on.
 */
async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: n }, async () => {
      const server = createServer();
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', resolve);
      });
      return server;
    }),
  );
  const ports = servers.map((s) => (s.address() as AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}

/**
 * Whether a start failed because a process found a port chosen for it taken (not the gateway's
 * fixed port, which another start would find taken too).
 */
function chosenPortTaken(err: unknown, fixedGatewayPort: boolean): boolean {
  if (!(err instanceof Error) || !err.message.includes('EADDRINUSE')) return false;
  return !(fixedGatewayPort && err.message.startsWith('gateway '));
}

/** startStack starts every process and resolves when each is listening. */
export async function startStack(opts: StackOptions): Promise<Stack> {
  const [secrets, bundles] = await Promise.all([loadSecrets(opts.dataDir), ensureBundles()]);
  const base = { DATABASE_URL: opts.databaseUrl, LOG_LEVEL: process.env.LOG_LEVEL ?? 'info', ...opts.env };
  const slots = new Map<ServiceName, Slot>();
  const urls = {} as Record<ServiceName, string>;
  let stopping = false;
  const notice = (service: ServiceName, message: string) => opts.onSupervisor?.(service, message);

  const launch = (service: ServiceName, env: Record<string, string>): Running => {
    const metrics = metricsPortEnv(service, opts.env?.METRICS_PORT ?? process.env.METRICS_PORT);
    const r = run(service, bundledEntry(bundles, service), { ...base, ...metrics, ...env }, opts);
    const slot = slots.get(service);
    clearTimeout(slot?.timer); // a restart by hand replaces one that was waiting
    if (slot) Object.assign(slot, { env, running: r, held: false });
    else slots.set(service, { env, running: r, held: false });
    if (opts.supervise) void r.exited.then(() => onExit(service, r));
    return r;
  };

  /** A supervised process exited: unless that was meant, start it again after a growing wait. */
  const onExit = (service: ServiceName, r: Running) => {
    const slot = slots.get(service);
    const policy = opts.supervise;
    if (!slot || !policy || stopping || slot.held || slot.running !== r) return;
    const delay = restartDelay(policy, slot.lastDelayMs, Date.now() - r.startedAt);
    slot.lastDelayMs = delay;
    notice(service, `exited unexpectedly (${describeExit(r.child)}); restarting in ${formatDelay(delay)}`);
    slot.timer = setTimeout(() => {
      slot.timer = undefined;
      if (stopping || slot.held) return;
      const next = launch(service, slot.env);
      void listening(service, next).then(
        (port) => notice(service, `restarted (pid ${next.child.pid}), listening on port ${port}`),
        // A run that never listens: stop it, and its exit schedules the next attempt.
        () => stopProcess(next, 5_000),
      );
    }, delay);
  };

  const start = async (service: ServiceName, env: Record<string, string>) => {
    const r = launch(service, env);
    const port = await listening(service, r);
    urls[service] = `http://127.0.0.1:${port}`;
    // Restarts reuse the port, so that the peers configured with this address reach the new process.
    const slot = slots.get(service);
    if (slot) slot.env = { ...env, PORT: String(port) };
    if (opts.supervise) notice(service, `started (pid ${r.child.pid}), listening on port ${port}`);
  };
  const stopAll = async () => {
    stopping = true;
    const codes: Partial<Record<ServiceName, number | null>> = {};
    for (const slot of slots.values()) clearTimeout(slot.timer);
    for (const name of ['gateway', ...DOMAIN_SERVICES, 'upstream-proxy', 'ads-sandbox'] as const) {
      const slot = slots.get(name);
      if (!slot) continue;
      slot.held = true;
      codes[name] = await stopProcess(slot.running);
    }
    return codes;
  };
  /**
   * Every process at once, each on a port chosen beforehand, so that its peers' addresses are
   * known before any listens: none calls a peer while starting (the service clients connect on
   * first use, and work that reaches a peer is retried by the bus).
   */
  const startAll = async () => {
    const [sandbox, upstream, changes, marketing, optimizer, chosenGateway] = await freePorts(6);
    const gatewayPort = opts.gatewayPort ?? chosenGateway;
    const at = (port: number | undefined) => `http://127.0.0.1:${port}`;
    const grpc = { PRINCIPAL_PUBLIC_KEY: secrets.principalPublicKey };
    const peers = { UPSTREAM_PROXY_URL: at(upstream) };
    await Promise.all([
      start('ads-sandbox', { PORT: String(sandbox), SANDBOX_ADMIN_TOKEN: secrets.sandboxAdminToken }),
      start('upstream-proxy', {
        ...grpc,
        PORT: String(upstream),
        CHANGES_PUBLIC_KEY: secrets.changesPublicKey,
        UPSTREAM_URL: at(sandbox),
        UPSTREAM_CREDENTIAL_KEY: secrets.upstreamCredentialKey,
      }),
      start('changes', {
        ...grpc,
        ...peers,
        PORT: String(changes),
        CHANGES_PRIVATE_KEY: secrets.changesPrivateKey,
        OPTIMIZER_PUBLIC_KEY: secrets.optimizerPublicKey,
      }),
      start('marketing', { ...grpc, ...peers, PORT: String(marketing) }),
      // The optimizer publishes approved proposals through the changes service (from its bus).
      start('optimizer', {
        ...grpc,
        ...peers,
        PORT: String(optimizer),
        CHANGES_URL: at(changes),
        OPTIMIZER_PRIVATE_KEY: secrets.optimizerPrivateKey,
      }),
      start('gateway', {
        PORT: String(gatewayPort),
        PUBLIC_URL: at(gatewayPort),
        PRINCIPAL_PRIVATE_KEY: secrets.principalPrivateKey,
        UPSTREAM_PROXY_URL: at(upstream),
        CHANGES_URL: at(changes),
        OPTIMIZER_URL: at(optimizer),
        MARKETING_URL: at(marketing),
      }),
    ]);
  };
  for (let attempt = 1; ; attempt++) {
    try {
      await startAll();
      break;
    } catch (err) {
      await stopAll();
      // A port chosen beforehand can be taken by another program before our process binds it:
      // then the whole stack starts again on new ports.
      if (attempt >= 3 || !chosenPortTaken(err, opts.gatewayPort !== undefined)) throw err;
      stopping = false;
      slots.clear();
    }
  }

  const adminEnv = {
    DATABASE_URL: opts.databaseUrl,
    PRINCIPAL_PRIVATE_KEY: secrets.principalPrivateKey,
    UPSTREAM_PROXY_URL: urls['upstream-proxy'],
    CHANGES_URL: urls.changes,
    SANDBOX_URL: urls['ads-sandbox'],
    SANDBOX_ADMIN_TOKEN: secrets.sandboxAdminToken,
  };
  const admin = (args: string[]) =>
    new Promise<string>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        [...nodeArgs(bundledEntry(bundles, 'gateway', 'admin')), ...args],
        {
          cwd: REPO_ROOT,
          env: { ...process.env, ...adminEnv },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let out = '';
      let err = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
      child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
      child.on('exit', (code) =>
        code === 0 ? resolve(out) : reject(new Error(err.trim() || `admin exited ${code}`)),
      );
    });

  return {
    gatewayUrl: urls.gateway,
    mcpUrl: `${urls.gateway}/mcp`,
    urls,
    secrets,
    adminEnv,
    recentOutput: (s) => [...(slots.get(s)?.running.lines ?? [])],
    admin,
    async seedDemo(existingToken) {
      const out = await admin(existingToken ? ['seed-demo', '--token', existingToken] : ['seed-demo']);
      return JSON.parse(out) as SeedResult;
    },
    process(service) {
      const slot = slots.get(service);
      if (!slot) throw new Error(`${service} is not running`);
      return slot.running.child;
    },
    async kill(service, signal) {
      const slot = slots.get(service);
      if (!slot) throw new Error(`${service} is not running`);
      slot.held = true;
      clearTimeout(slot.timer);
      const { child, exited } = slot.running;
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
    async restart(service) {
      const slot = slots.get(service);
      if (!slot) throw new Error(`${service} was never started`);
      await start(service, slot.env);
    },
    stop: stopAll,
  };
}
