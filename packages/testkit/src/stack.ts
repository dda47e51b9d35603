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
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatePrincipalKeys } from '@adsmcp/runtime/principal';
import { type Bundles, bundledEntry, ensureBundles } from './bundles.ts';
import { freePorts } from './free-port.ts';
import { formatDelay, type RestartPolicy, restartDelay } from './restart-backoff.ts';
import { type RoundRobinProxy, startRoundRobinProxy } from './round-robin-proxy.ts';

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
  /** The marketing service's own key: its worker signs the calls that tell webhooks an import finished. */
  marketingPrivateKey: string;
  marketingPublicKey: string;
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
  /** Each output line of each process (`replica` counts from 0). */
  onLine?: (service: ServiceName, line: string, replica: number) => void;
  /** Extra Node.js arguments for every process (e.g. --cpu-prof for a benchmark). */
  nodeArgs?: string[];
  /**
   * More Node.js arguments and environment for one process, after `nodeArgs` and `env` (e.g. a
   * heap setting tried on one replica beside another that runs without it, under the same load).
   */
  processOptions?: (
    service: ServiceName,
    replica: number,
  ) => { nodeArgs?: string[]; env?: Record<string, string> };
  /**
   * Restart a process that exits unexpectedly (after start-up, outside `kill` and `stop`), on the
   * port it had, after a wait that grows while it keeps crashing. `npm start` supervises; tests
   * that kill processes on purpose do not.
   */
  supervise?: RestartPolicy;
  /** What the supervisor did: a process exited unexpectedly, was restarted, listens again, stopped. */
  onSupervisor?: (service: ServiceName, message: string) => void;
  /**
   * What a supervised restart must wait for: while this returns something (the database is
   * down), a process that exits is restarted only once `ready` resolves, and not after a blind
   * wait into a crash loop; the notices say what it waited for.
   */
  restartWhen?: () => { waitingFor: string; ready: Promise<void> } | undefined;
  /**
   * Processes of each service but the sandbox (the ad platform stays one), each on its own port,
   * all on the one database (default 1). With more than one, every peer is given the list of a
   * service's addresses, and the gateways sit behind a round-robin proxy on `gatewayPort` that
   * stands in for the Kubernetes Service (`gatewayUrl` is the proxy's).
   */
  replicas?: number;
  /**
   * Runs the marketing service in the test's own process instead of from its bundle: called with
   * the environment its process would get, before the other processes start, it returns the
   * address it listens on and how to stop it. One runs whatever `replicas` says. For a test that
   * gives the service what a process cannot be given, such as a fetcher that reaches the test's
   * local HTTPS site (the product's refuses loopback addresses).
   */
  inProcessMarketing?: (env: Record<string, string>) => Promise<InProcessService>;
}

export interface InProcessService {
  url: string;
  stop(): Promise<void>;
}

export interface Stack {
  gatewayUrl: string;
  mcpUrl: string;
  /** Each service's address as its peers are given it: with replicas, a comma-separated list. */
  urls: Record<ServiceName, string>;
  /** Each replica's own address (the gateway's, not the proxy's). */
  replicaUrls: Record<ServiceName, string[]>;
  secrets: StackSecrets;
  /** Env for `npm run admin` against this stack. */
  adminEnv: Record<string, string>;
  /** The last lines a process printed (every replica's, one after another, unless one is named). */
  recentOutput(service: ServiceName, replica?: number): string[];
  /** Runs `seed-demo` and returns what it printed. */
  seedDemo(existingToken?: string): Promise<SeedResult>;
  /** Runs the admin command with `args`; resolves with its stdout, rejects with its stderr (and `exitCode`). */
  admin(args: string[]): Promise<string>;
  /** The service's current process (a new one after each restart); `replica` counts from 0. */
  process(service: ServiceName, replica?: number): ChildProcess;
  /**
   * Kills a process of the service with `signal` (one replica when named, else every one, so that
   * the service is down) and waits for it to exit (SIGKILL: no drain, as a crash). It stays
   * stopped, even when supervised, until `restart`.
   */
  kill(service: ServiceName, signal: NodeJS.Signals, replica?: number): Promise<void>;
  /**
   * Starts a stopped process (the named replica, else every one) again on the port it had, so its
   * peers reach it unchanged; resolves once it listens.
   */
  restart(service: ServiceName, replica?: number): Promise<void>;
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
  if (!secrets.marketingPrivateKey || !secrets.marketingPublicKey) {
    const keys = await generatePrincipalKeys();
    secrets.marketingPrivateKey = keys.privateKeyPem;
    secrets.marketingPublicKey = keys.publicKeyPem;
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

/**
 * The V8 heap bounds every service process runs with; the images' command runs the same
 * (Dockerfile, Dockerfile.prebuilt; deploy/k8s/test/node-flags.test.ts keeps them equal). V8 gives
 * back the memory a burst grew only when its memory reducer runs, and the reducer waits until the
 * allocation rate averaged over the last ten collections looks low: after a burst that took from
 * 10 s to over a minute of quiet (docs/performance.md, "Memory after the seeded runs"). So what a
 * burst can grow is bounded instead: the young generation at 4 MB a semi-space (Node 20's default
 * lets it grow to 16, 32 MB of new space) and the old space's garbage to 30% of its live heap
 * between full collections (V8's own factor goes up to 4x under load). And `--expose-gc` lets the
 * runtime's quiet collector (packages/runtime/src/quiet-gc.ts) ask for the full collection that
 * gives a burst's heap back once the process falls quiet.
 */
export const SERVICE_NODE_FLAGS: readonly string[] = [
  '--max-semi-space-size=4',
  '--heap-growing-percent=30',
  '--expose-gc',
];

/**
 * The C allocator's settings every service process runs with; the images set the same (their
 * `ENV`, kept equal by deploy/k8s/test/node-flags.test.ts). glibc's malloc serves a block of
 * 128 KiB or more from its own mapping, given back on free, but after such a block is freed it
 * raises that threshold to the block's size (up to 32 MiB), and from then on serves blocks that
 * size from its arenas, where a small block still in use beside them holds the whole arena's top:
 * buffers of a burst stayed resident after it (a burst of 0.5 MB buffers left 210 MB behind, 5.5
 * with these). Fixed thresholds keep large blocks in their own mappings and let the arenas give
 * back a free top over 128 KiB (docs/performance.md, "What malloc kept").
 */
export const SERVICE_ENV: Readonly<Record<string, string>> = {
  MALLOC_MMAP_THRESHOLD_: '131072',
  MALLOC_TRIM_THRESHOLD_: '131072',
};

/** Node's arguments for a bundled script: stack traces point at the TypeScript sources. */
function nodeArgs(script: string, extra: string[] = []): string[] {
  // `extra` after the defaults: a later V8 flag wins, so a benchmark can try another value.
  return [...SERVICE_NODE_FLAGS, ...extra, '--enable-source-maps', script];
}

function run(
  service: ServiceName,
  script: string,
  env: Record<string, string>,
  opts: StackOptions,
  replica = 0,
): Running {
  const own = opts.processOptions?.(service, replica);
  const child = spawn(
    process.execPath,
    nodeArgs(script, [...(opts.nodeArgs ?? []), ...(own?.nodeArgs ?? [])]),
    {
      cwd: REPO_ROOT,
      env: { ...process.env, ...SERVICE_ENV, ...env, ...own?.env },
      // The IPC channel carries no messages: its end tells the process that the stack's owner died,
      // even by SIGKILL, and it stops itself (exitWithParent in the runtime's lifecycle).
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      // A supervised stack's processes are out of the terminal's process group: Ctrl-C reaches only
      // the supervisor, which stops them in order instead of seeing them all die at once.
      detached: opts.supervise !== undefined,
    },
  );
  const onLine = opts.onLine;
  const lines: string[] = [];
  const take = (chunk: Buffer, carry: { rest: string }) => {
    const parts = (carry.rest + chunk.toString('utf8')).split('\n');
    carry.rest = parts.pop() ?? '';
    for (const line of parts) {
      lines.push(line);
      if (lines.length > KEEP_LINES) lines.shift();
      onLine?.(service, line, replica);
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

/** A service's drain time on SIGTERM: onShutdown's in packages/runtime/src/lifecycle.ts. */
const DRAIN_MS = 20_000;

/** Stops a process with SIGTERM, and SIGKILL once it has had its drain time and a little more. */
async function stopProcess(r: Running, graceMs = DRAIN_MS + 5_000): Promise<number | null> {
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

/** One process of a service under the stack: how it is started, its current process, and its restart state. */
interface Slot {
  service: ServiceName;
  replica: number;
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
function metricsPortEnv(service: ServiceName, raw: string | undefined, replica = 0): Record<string, string> {
  const n = Number(raw);
  if (raw === undefined || raw.trim() === '' || !Number.isInteger(n) || n <= 0) return {};
  return { METRICS_PORT: String(n + METRICS_ORDER.indexOf(service) + replica * METRICS_ORDER.length) };
}

/** The key of a replica's slot: the service's name for the first, `name#n` for the others. */
function slotKey(service: ServiceName, replica: number): string {
  return replica === 0 ? service : `${service}#${replica}`;
}

/**
 * Whether a start failed because a process found a port chosen for it taken (not the gateway's
 * fixed port, which another start would find taken too).
 */
function chosenPortTaken(err: unknown, fixedGatewayPort: boolean): boolean {
  if (!(err instanceof Error) || !err.message.includes('EADDRINUSE')) return false;
  return !(fixedGatewayPort && err.message.startsWith('gateway '));
}

/** The ports of one start, chosen before any process listens. */
interface PortPlan {
  sandbox: number;
  upstream: number[];
  changes: number[];
  marketing: number[];
  optimizer: number[];
  /** The public port: the gateway's, or its round-robin proxy's when `proxied`. */
  gatewayPort: number;
  gatewayReplicas: number[];
  proxied: boolean;
}

/** The ports of a start with `n` replicas of each service but the sandbox. */
async function choosePorts(n: number, fixedGatewayPort: number | undefined): Promise<PortPlan> {
  const proxied = n > 1;
  const ports = await freePorts(1 + 4 * n + (proxied ? n + 1 : 1));
  const take = (count: number) => ports.splice(0, count);
  const [sandbox] = take(1);
  const [upstream, changes, marketing, optimizer] = [take(n), take(n), take(n), take(n)];
  const chosenGateway = take(1)[0] as number;
  const gatewayPort = fixedGatewayPort ?? chosenGateway;
  const gatewayReplicas = proxied ? take(n) : [gatewayPort];
  return {
    sandbox: sandbox as number,
    upstream,
    changes,
    marketing,
    optimizer,
    gatewayPort,
    gatewayReplicas,
    proxied,
  };
}

const at = (port: number | undefined) => `http://127.0.0.1:${port}`;
const list = (replicas: number[]) => replicas.map(at).join(',');

/** The marketing service's environment: its key, its peers' keys and addresses. */
function marketingEnvOf(secrets: StackSecrets, plan: PortPlan): Record<string, string> {
  return {
    PRINCIPAL_PUBLIC_KEY: secrets.principalPublicKey,
    UPSTREAM_PROXY_URL: list(plan.upstream),
    CHANGES_PUBLIC_KEY: secrets.changesPublicKey,
    OPTIMIZER_PUBLIC_KEY: secrets.optimizerPublicKey,
    // An import's end is told to the changes service, for the workspace's webhooks.
    MARKETING_PRIVATE_KEY: secrets.marketingPrivateKey,
    CHANGES_URL: list(plan.changes),
  };
}

/** Every other service's environment: the keys it signs with or checks, and its peers' addresses. */
function serviceEnvsOf(secrets: StackSecrets, plan: PortPlan, marketingUrls: string) {
  const grpc = { PRINCIPAL_PUBLIC_KEY: secrets.principalPublicKey };
  const peers = { UPSTREAM_PROXY_URL: list(plan.upstream) };
  return {
    'ads-sandbox': { SANDBOX_ADMIN_TOKEN: secrets.sandboxAdminToken },
    'upstream-proxy': {
      ...grpc,
      CHANGES_PUBLIC_KEY: secrets.changesPublicKey,
      // The optimizer reads review runs' snapshots as its worker.
      OPTIMIZER_PUBLIC_KEY: secrets.optimizerPublicKey,
      // The marketing service reads what a performance report compares.
      MARKETING_PUBLIC_KEY: secrets.marketingPublicKey,
      UPSTREAM_URL: at(plan.sandbox),
      UPSTREAM_CREDENTIAL_KEY: secrets.upstreamCredentialKey,
    },
    changes: {
      ...grpc,
      ...peers,
      CHANGES_PRIVATE_KEY: secrets.changesPrivateKey,
      OPTIMIZER_PUBLIC_KEY: secrets.optimizerPublicKey,
      MARKETING_PUBLIC_KEY: secrets.marketingPublicKey,
      // Campaign images a change uploads are read there.
      MARKETING_URL: marketingUrls,
    },
    // The optimizer publishes approved proposals through the changes service (from its bus).
    optimizer: {
      ...grpc,
      ...peers,
      CHANGES_URL: list(plan.changes),
      // The campaign assets its variants name are checked there.
      MARKETING_URL: marketingUrls,
      OPTIMIZER_PRIVATE_KEY: secrets.optimizerPrivateKey,
    },
    gateway: {
      PUBLIC_URL: at(plan.gatewayPort),
      PRINCIPAL_PRIVATE_KEY: secrets.principalPrivateKey,
      UPSTREAM_PROXY_URL: list(plan.upstream),
      CHANGES_URL: list(plan.changes),
      OPTIMIZER_URL: list(plan.optimizer),
      MARKETING_URL: marketingUrls,
    },
  };
}

/**
 * Runs the admin command with `args` against the stack in `adminEnv`; resolves with its stdout,
 * rejects with its stderr (the error's `exitCode` the command's exit code).
 */
function runAdmin(bundles: Bundles, adminEnv: Record<string, string>, args: string[]): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs(bundledEntry(bundles, 'gateway', 'admin')), ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...adminEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
    child.on('exit', (code) =>
      code === 0
        ? resolve(out)
        : reject(Object.assign(new Error(err.trim() || `admin exited ${code}`), { exitCode: code })),
    );
  });
}

/**
 * The processes of one stack: starting them, supervising them (a restart after a growing wait,
 * or once what they need is back), killing, restarting and stopping them.
 */
class Supervisor {
  readonly slots = new Map<string, Slot>();
  readonly urls = {} as Record<ServiceName, string>;
  readonly replicaUrls = {} as Record<ServiceName, string[]>;
  gatewayProxy: RoundRobinProxy | undefined;
  private inProcess: InProcessService | undefined;
  private stopping = false;
  private readonly base: Record<string, string>;

  constructor(
    private readonly opts: StackOptions,
    private readonly bundles: Bundles,
    private readonly secrets: StackSecrets,
  ) {
    this.base = { DATABASE_URL: opts.databaseUrl, LOG_LEVEL: process.env.LOG_LEVEL ?? 'info', ...opts.env };
  }

  replicaCount(service: ServiceName): number {
    return service === 'ads-sandbox' ? 1 : Math.max(1, Math.floor(this.opts.replicas ?? 1));
  }

  private notice(service: ServiceName, replica: number, message: string): void {
    this.opts.onSupervisor?.(
      service,
      this.replicaCount(service) > 1 ? `replica ${replica}: ${message}` : message,
    );
  }

  private launch(service: ServiceName, env: Record<string, string>, replica = 0): Running {
    const { opts, slots } = this;
    const metrics = metricsPortEnv(service, opts.env?.METRICS_PORT ?? process.env.METRICS_PORT, replica);
    const r = run(
      service,
      bundledEntry(this.bundles, service),
      { ...this.base, ...metrics, ...env },
      opts,
      replica,
    );
    const key = slotKey(service, replica);
    const slot = slots.get(key);
    clearTimeout(slot?.timer); // a restart by hand replaces one that was waiting
    if (slot) Object.assign(slot, { env, running: r, held: false });
    else slots.set(key, { service, replica, env, running: r, held: false });
    if (opts.supervise) void r.exited.then(() => this.onExit(key, r));
    return r;
  }

  /**
   * Starts a supervised process again, unless it was stopped or replaced meanwhile; while what it
   * needs is down (restartWhen), only once that is back, as a first start (no growing wait).
   */
  private relaunch(slot: Slot, r: Running): void {
    if (this.stopping || slot.held || slot.running !== r) return;
    const { service, replica } = slot;
    const gate = this.opts.restartWhen?.();
    if (gate) {
      this.notice(service, replica, `${gate.waitingFor} is down; restarting once it is back`);
      this.afterGate(slot, r, gate);
      return;
    }
    const next = this.launch(service, slot.env, replica);
    void listening(service, next).then(
      (port) => this.notice(service, replica, `restarted (pid ${next.child.pid}), listening on port ${port}`),
      // A run that never listens: stop it, and its exit schedules the next attempt.
      () => stopProcess(next, 5_000),
    );
  }

  /** Restarts the process once `gate` opens (a crash while it was shut does not count toward the backoff). */
  private afterGate(slot: Slot, r: Running, gate: { waitingFor: string; ready: Promise<void> }): void {
    slot.lastDelayMs = undefined;
    void gate.ready.then(() => {
      if (this.stopping || slot.held || slot.running !== r) return;
      this.notice(slot.service, slot.replica, `${gate.waitingFor} is back; restarting`);
      this.relaunch(slot, r);
    });
  }

  /** A supervised process exited: unless that was meant, start it again after a growing wait. */
  private onExit(key: string, r: Running): void {
    const slot = this.slots.get(key);
    const policy = this.opts.supervise;
    if (!slot || !policy || this.stopping || slot.held || slot.running !== r) return;
    const { service, replica } = slot;
    const gate = this.opts.restartWhen?.();
    if (gate) {
      this.notice(
        service,
        replica,
        `exited unexpectedly (${describeExit(r.child)}) while ${gate.waitingFor} is down; restarting once it is back`,
      );
      this.afterGate(slot, r, gate);
      return;
    }
    const delay = restartDelay(policy, slot.lastDelayMs, Date.now() - r.startedAt);
    slot.lastDelayMs = delay;
    this.notice(
      service,
      replica,
      `exited unexpectedly (${describeExit(r.child)}); restarting in ${formatDelay(delay)}`,
    );
    slot.timer = setTimeout(() => {
      slot.timer = undefined;
      this.relaunch(slot, r);
    }, delay);
  }

  /** Starts one process of a service; resolves with its port once it listens. */
  async startReplica(service: ServiceName, env: Record<string, string>, replica: number): Promise<number> {
    const r = this.launch(service, env, replica);
    // N replicas start side by side on the same cores: give them N times as long.
    const port = await listening(service, r, 60_000 * this.replicaCount(service));
    // Restarts reuse the port, so that the peers configured with this address reach the new process.
    const slot = this.slots.get(slotKey(service, replica));
    if (slot) slot.env = { ...env, PORT: String(port) };
    if (this.opts.supervise)
      this.notice(service, replica, `started (pid ${r.child.pid}), listening on port ${port}`);
    return port;
  }

  /** Starts every replica of a service at once, replica i on `ports[i]`. */
  private async start(
    service: ServiceName,
    env: Record<string, string>,
    ports: readonly number[],
  ): Promise<void> {
    await Promise.all(ports.map((port, i) => this.startReplica(service, { ...env, PORT: String(port) }, i)));
    this.replicaUrls[service] = ports.map((port) => `http://127.0.0.1:${port}`);
    this.urls[service] = this.replicaUrls[service].join(',');
  }

  /** Stops every process, gateway first; resolves with each service's exit code. */
  async stopAll(): Promise<Partial<Record<ServiceName, number | null>>> {
    this.stopping = true;
    const codes: Partial<Record<ServiceName, number | null>> = {};
    for (const slot of this.slots.values()) clearTimeout(slot.timer);
    await this.gatewayProxy?.close();
    for (const name of ['gateway', ...DOMAIN_SERVICES, 'upstream-proxy', 'ads-sandbox'] as const) {
      const replicas = [...this.slots.values()].filter((slot) => slot.service === name);
      if (replicas.length === 0) continue;
      for (const slot of replicas) slot.held = true;
      const exits = await Promise.all(replicas.map((slot) => this.stopSlot(slot)));
      // One code per service: the first replica's, unless another did worse.
      codes[name] = exits.find((code) => code !== 0) ?? exits[0];
    }
    await this.inProcess?.stop();
    this.inProcess = undefined;
    return codes;
  }

  private async stopSlot(slot: Slot): Promise<number | null> {
    const began = Date.now();
    const running = slot.running.child.exitCode === null && slot.running.child.signalCode === null;
    const code = await stopProcess(slot.running);
    if (this.opts.supervise && running)
      this.notice(
        slot.service,
        slot.replica,
        `stopped (${describeExit(slot.running.child)}) in ${formatDelay(Date.now() - began)}`,
      );
    return code;
  }

  /** The named replica's slot, or every replica's when none is named. */
  chosen(service: ServiceName, replica: number | undefined): Slot[] {
    if (replica !== undefined) return [this.slotOf(service, replica)];
    const found = [...this.slots.values()].filter((slot) => slot.service === service);
    if (found.length === 0) throw new Error(`${service} was never started`);
    return found;
  }

  slotOf(service: ServiceName, replica = 0): Slot {
    const slot = this.slots.get(slotKey(service, replica));
    if (!slot) throw new Error(`${service} replica ${replica} was never started`);
    return slot;
  }

  /**
   * Every process at once, each on a port chosen beforehand, so that its peers' addresses are
   * known before any listens: none calls a peer while starting (the service clients connect on
   * first use, and work that reaches a peer is retried by the bus). A replicated service's peers
   * are given the list of its replicas' addresses; replicated gateways listen on ports of their
   * own, behind a round-robin proxy on the public port (standing in for a Kubernetes Service).
   */
  private async startAll(): Promise<void> {
    const { opts, secrets } = this;
    const plan = await choosePorts(this.replicaCount('gateway'), opts.gatewayPort);
    const marketingEnv = marketingEnvOf(secrets, plan);
    if (opts.inProcessMarketing !== undefined) {
      this.inProcess = await opts.inProcessMarketing({ ...this.base, ...marketingEnv });
      this.replicaUrls.marketing = [this.inProcess.url];
      this.urls.marketing = this.inProcess.url;
    }
    const marketingUrls = this.inProcess === undefined ? list(plan.marketing) : this.inProcess.url;
    const envs = serviceEnvsOf(secrets, plan, marketingUrls);
    await Promise.all([
      this.start('ads-sandbox', envs['ads-sandbox'], [plan.sandbox]),
      this.start('upstream-proxy', envs['upstream-proxy'], plan.upstream),
      this.start('changes', envs.changes, plan.changes),
      this.inProcess === undefined ? this.start('marketing', marketingEnv, plan.marketing) : undefined,
      this.start('optimizer', envs.optimizer, plan.optimizer),
      this.start('gateway', envs.gateway, plan.gatewayReplicas),
    ]);
    if (plan.proxied) {
      this.gatewayProxy = await startRoundRobinProxy({
        port: plan.gatewayPort,
        targets: this.replicaUrls.gateway,
      });
      this.urls.gateway = this.gatewayProxy.url;
    }
  }

  /**
   * Starts every process. A port chosen beforehand can be taken by another program before our
   * process binds it: then the whole stack starts again on new ports.
   */
  async startAllWithRetries(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.startAll();
        return;
      } catch (err) {
        await this.stopAll();
        if (attempt >= 3 || !chosenPortTaken(err, this.opts.gatewayPort !== undefined)) throw err;
        this.stopping = false;
        this.gatewayProxy = undefined;
        this.slots.clear();
      }
    }
  }

  async kill(service: ServiceName, signal: NodeJS.Signals, replica: number | undefined): Promise<void> {
    const chosen = this.chosen(service, replica);
    for (const slot of chosen) {
      slot.held = true;
      clearTimeout(slot.timer);
      // A stopping gateway leaves the front's rotation first, as a terminating pod's endpoint does.
      if (service === 'gateway')
        this.gatewayProxy?.setServing(this.replicaUrls.gateway[slot.replica] as string, false);
      const { child } = slot.running;
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    }
    await Promise.all(chosen.map((slot) => slot.running.exited));
  }

  async restart(service: ServiceName, replica: number | undefined): Promise<void> {
    const chosen = this.chosen(service, replica);
    await Promise.all(chosen.map((slot) => this.startReplica(service, slot.env, slot.replica)));
    if (service === 'gateway') {
      for (const slot of chosen)
        this.gatewayProxy?.setServing(this.replicaUrls.gateway[slot.replica] as string, true);
    }
  }
}

/** startStack starts every process and resolves when each is listening. */
export async function startStack(opts: StackOptions): Promise<Stack> {
  const [secrets, bundles] = await Promise.all([loadSecrets(opts.dataDir), ensureBundles()]);
  const supervisor = new Supervisor(opts, bundles, secrets);
  await supervisor.startAllWithRetries();
  const { urls, replicaUrls, slots } = supervisor;
  const adminEnv = {
    DATABASE_URL: opts.databaseUrl,
    PRINCIPAL_PRIVATE_KEY: secrets.principalPrivateKey,
    UPSTREAM_PROXY_URL: urls['upstream-proxy'],
    CHANGES_URL: urls.changes,
    OPTIMIZER_URL: urls.optimizer,
    SANDBOX_URL: urls['ads-sandbox'],
    SANDBOX_ADMIN_TOKEN: secrets.sandboxAdminToken,
  };
  const admin = (args: string[]) => runAdmin(bundles, adminEnv, args);
  return {
    gatewayUrl: urls.gateway,
    mcpUrl: `${urls.gateway}/mcp`,
    urls,
    replicaUrls,
    secrets,
    adminEnv,
    recentOutput: (service, replica) =>
      [...slots.values()]
        .filter((slot) => slot.service === service && (replica === undefined || slot.replica === replica))
        .flatMap((slot) => slot.running.lines),
    admin,
    async seedDemo(existingToken) {
      const out = await admin(existingToken ? ['seed-demo', '--token', existingToken] : ['seed-demo']);
      return JSON.parse(out) as SeedResult;
    },
    process(service, replica) {
      return supervisor.slotOf(service, replica).running.child;
    },
    kill: (service, signal, replica) => supervisor.kill(service, signal, replica),
    restart: (service, replica) => supervisor.restart(service, replica),
    stop: () => supervisor.stopAll(),
  };
}
