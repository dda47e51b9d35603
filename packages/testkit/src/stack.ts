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
  /** Runs the admin command with `args`; resolves with its stdout, rejects with its stderr. */
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

/** Node's arguments for a bundled script: stack traces point at the TypeScript sources. */
function nodeArgs(script: string, extra: string[] = []): string[] {
  return [...extra, '--enable-source-maps', script];
}

function run(
  service: ServiceName,
  script: string,
  env: Record<string, string>,
  opts: StackOptions,
  replica = 0,
): Running {
  const child = spawn(process.execPath, nodeArgs(script, opts.nodeArgs), {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    // The IPC channel carries no messages: its end tells the process that the stack's owner died,
    // even by SIGKILL, and it stops itself (exitWithParent in the runtime's lifecycle).
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
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
  const slots = new Map<string, Slot>();
  const urls = {} as Record<ServiceName, string>;
  const replicaUrls = {} as Record<ServiceName, string[]>;
  const replicaCount = (service: ServiceName) =>
    service === 'ads-sandbox' ? 1 : Math.max(1, Math.floor(opts.replicas ?? 1));
  let gatewayProxy: RoundRobinProxy | undefined;
  let inProcess: InProcessService | undefined;
  let stopping = false;
  const notice = (service: ServiceName, replica: number, message: string) =>
    opts.onSupervisor?.(service, replicaCount(service) > 1 ? `replica ${replica}: ${message}` : message);

  const launch = (service: ServiceName, env: Record<string, string>, replica = 0): Running => {
    const metrics = metricsPortEnv(service, opts.env?.METRICS_PORT ?? process.env.METRICS_PORT, replica);
    const r = run(service, bundledEntry(bundles, service), { ...base, ...metrics, ...env }, opts, replica);
    const key = slotKey(service, replica);
    const slot = slots.get(key);
    clearTimeout(slot?.timer); // a restart by hand replaces one that was waiting
    if (slot) Object.assign(slot, { env, running: r, held: false });
    else slots.set(key, { service, replica, env, running: r, held: false });
    if (opts.supervise) void r.exited.then(() => onExit(key, r));
    return r;
  };

  /**
   * Starts a supervised process again, unless it was stopped or replaced meanwhile; while what it
   * needs is down (restartWhen), only once that is back, as a first start (no growing wait).
   */
  const relaunch = (slot: Slot, r: Running) => {
    if (stopping || slot.held || slot.running !== r) return;
    const { service, replica } = slot;
    const gate = opts.restartWhen?.();
    if (gate) {
      notice(service, replica, `${gate.waitingFor} is down; restarting once it is back`);
      afterGate(slot, r, gate);
      return;
    }
    const next = launch(service, slot.env, replica);
    void listening(service, next).then(
      (port) => notice(service, replica, `restarted (pid ${next.child.pid}), listening on port ${port}`),
      // A run that never listens: stop it, and its exit schedules the next attempt.
      () => stopProcess(next, 5_000),
    );
  };

  /** Restarts the process once `gate` opens (a crash while it was shut does not count toward the backoff). */
  const afterGate = (slot: Slot, r: Running, gate: { waitingFor: string; ready: Promise<void> }) => {
    slot.lastDelayMs = undefined;
    void gate.ready.then(() => {
      if (stopping || slot.held || slot.running !== r) return;
      notice(slot.service, slot.replica, `${gate.waitingFor} is back; restarting`);
      relaunch(slot, r);
    });
  };

  /** A supervised process exited: unless that was meant, start it again after a growing wait. */
  const onExit = (key: string, r: Running) => {
    const slot = slots.get(key);
    const policy = opts.supervise;
    if (!slot || !policy || stopping || slot.held || slot.running !== r) return;
    const { service, replica } = slot;
    const gate = opts.restartWhen?.();
    if (gate) {
      notice(
        service,
        replica,
        `exited unexpectedly (${describeExit(r.child)}) while ${gate.waitingFor} is down; restarting once it is back`,
      );
      afterGate(slot, r, gate);
      return;
    }
    const delay = restartDelay(policy, slot.lastDelayMs, Date.now() - r.startedAt);
    slot.lastDelayMs = delay;
    notice(
      service,
      replica,
      `exited unexpectedly (${describeExit(r.child)}); restarting in ${formatDelay(delay)}`,
    );
    slot.timer = setTimeout(() => {
      slot.timer = undefined;
      relaunch(slot, r);
    }, delay);
  };

  /** Starts one process of a service; resolves with its port once it listens. */
  const startReplica = async (service: ServiceName, env: Record<string, string>, replica: number) => {
    const r = launch(service, env, replica);
    // N replicas start side by side on the same cores: give them N times as long.
    const port = await listening(service, r, 60_000 * replicaCount(service));
    // Restarts reuse the port, so that the peers configured with this address reach the new process.
    const slot = slots.get(slotKey(service, replica));
    if (slot) slot.env = { ...env, PORT: String(port) };
    if (opts.supervise) notice(service, replica, `started (pid ${r.child.pid}), listening on port ${port}`);
    return port;
  };
  /** Starts every replica of a service at once, replica i on `ports[i]`. */
  const start = async (service: ServiceName, env: Record<string, string>, ports: readonly number[]) => {
    await Promise.all(ports.map((port, i) => startReplica(service, { ...env, PORT: String(port) }, i)));
    replicaUrls[service] = ports.map((port) => `http://127.0.0.1:${port}`);
    urls[service] = replicaUrls[service].join(',');
  };
  const stopAll = async () => {
    stopping = true;
    const codes: Partial<Record<ServiceName, number | null>> = {};
    for (const slot of slots.values()) clearTimeout(slot.timer);
    await gatewayProxy?.close();
    for (const name of ['gateway', ...DOMAIN_SERVICES, 'upstream-proxy', 'ads-sandbox'] as const) {
      const replicas = [...slots.values()].filter((slot) => slot.service === name);
      if (replicas.length === 0) continue;
      for (const slot of replicas) slot.held = true;
      const exits = await Promise.all(
        replicas.map(async (slot) => {
          const began = Date.now();
          const running = slot.running.child.exitCode === null && slot.running.child.signalCode === null;
          const code = await stopProcess(slot.running);
          if (opts.supervise && running)
            notice(
              slot.service,
              slot.replica,
              `stopped (${describeExit(slot.running.child)}) in ${formatDelay(Date.now() - began)}`,
            );
          return code;
        }),
      );
      // One code per service: the first replica's, unless another did worse.
      codes[name] = exits.find((code) => code !== 0) ?? exits[0];
    }
    await inProcess?.stop();
    inProcess = undefined;
    return codes;
  };
  const replicasOf = (service: ServiceName): Slot[] => {
    const found = [...slots.values()].filter((slot) => slot.service === service);
    if (found.length === 0) throw new Error(`${service} was never started`);
    return found;
  };
  const slotOf = (service: ServiceName, replica = 0): Slot => {
    const slot = slots.get(slotKey(service, replica));
    if (!slot) throw new Error(`${service} replica ${replica} was never started`);
    return slot;
  };
  /**
   * Every process at once, each on a port chosen beforehand, so that its peers' addresses are
   * known before any listens: none calls a peer while starting (the service clients connect on
   * first use, and work that reaches a peer is retried by the bus). A replicated service's peers
   * are given the list of its replicas' addresses; replicated gateways listen on ports of their
   * own, behind a round-robin proxy on the public port (standing in for a Kubernetes Service).
   */
  const startAll = async () => {
    const n = replicaCount('gateway');
    const proxied = n > 1;
    const ports = await freePorts(1 + 4 * n + (proxied ? n + 1 : 1));
    const take = (count: number) => ports.splice(0, count);
    const [sandbox] = take(1);
    const [upstream, changes, marketing, optimizer] = [take(n), take(n), take(n), take(n)];
    const chosenGateway = take(1)[0] as number;
    const gatewayPort = opts.gatewayPort ?? chosenGateway;
    const gatewayReplicas = proxied ? take(n) : [gatewayPort];
    const at = (port: number | undefined) => `http://127.0.0.1:${port}`;
    const list = (replicas: number[]) => replicas.map(at).join(',');
    const grpc = { PRINCIPAL_PUBLIC_KEY: secrets.principalPublicKey };
    const peers = { UPSTREAM_PROXY_URL: list(upstream) };
    const marketingEnv = {
      ...grpc,
      ...peers,
      CHANGES_PUBLIC_KEY: secrets.changesPublicKey,
      OPTIMIZER_PUBLIC_KEY: secrets.optimizerPublicKey,
      // An import's end is told to the changes service, for the workspace's webhooks.
      MARKETING_PRIVATE_KEY: secrets.marketingPrivateKey,
      CHANGES_URL: list(changes),
    };
    if (opts.inProcessMarketing !== undefined) {
      inProcess = await opts.inProcessMarketing({ ...base, ...marketingEnv });
      replicaUrls.marketing = [inProcess.url];
      urls.marketing = inProcess.url;
    }
    const marketingUrls = inProcess === undefined ? list(marketing) : inProcess.url;
    await Promise.all([
      start('ads-sandbox', { SANDBOX_ADMIN_TOKEN: secrets.sandboxAdminToken }, [sandbox as number]),
      start(
        'upstream-proxy',
        {
          ...grpc,
          CHANGES_PUBLIC_KEY: secrets.changesPublicKey,
          // The optimizer reads review runs' snapshots as its worker.
          OPTIMIZER_PUBLIC_KEY: secrets.optimizerPublicKey,
          // The marketing service reads what a performance report compares.
          MARKETING_PUBLIC_KEY: secrets.marketingPublicKey,
          UPSTREAM_URL: at(sandbox),
          UPSTREAM_CREDENTIAL_KEY: secrets.upstreamCredentialKey,
        },
        upstream,
      ),
      start(
        'changes',
        {
          ...grpc,
          ...peers,
          CHANGES_PRIVATE_KEY: secrets.changesPrivateKey,
          OPTIMIZER_PUBLIC_KEY: secrets.optimizerPublicKey,
          MARKETING_PUBLIC_KEY: secrets.marketingPublicKey,
          // Campaign images a change uploads are read there.
          MARKETING_URL: marketingUrls,
        },
        changes,
      ),
      inProcess === undefined ? start('marketing', marketingEnv, marketing) : undefined,
      // The optimizer publishes approved proposals through the changes service (from its bus).
      start(
        'optimizer',
        {
          ...grpc,
          ...peers,
          CHANGES_URL: list(changes),
          // The campaign assets its variants name are checked there.
          MARKETING_URL: marketingUrls,
          OPTIMIZER_PRIVATE_KEY: secrets.optimizerPrivateKey,
        },
        optimizer,
      ),
      start(
        'gateway',
        {
          PUBLIC_URL: at(gatewayPort),
          PRINCIPAL_PRIVATE_KEY: secrets.principalPrivateKey,
          UPSTREAM_PROXY_URL: list(upstream),
          CHANGES_URL: list(changes),
          OPTIMIZER_URL: list(optimizer),
          MARKETING_URL: marketingUrls,
        },
        gatewayReplicas,
      ),
    ]);
    if (proxied) {
      gatewayProxy = await startRoundRobinProxy({ port: gatewayPort, targets: replicaUrls.gateway });
      urls.gateway = gatewayProxy.url;
    }
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
      gatewayProxy = undefined;
      slots.clear();
    }
  }

  const adminEnv = {
    DATABASE_URL: opts.databaseUrl,
    PRINCIPAL_PRIVATE_KEY: secrets.principalPrivateKey,
    UPSTREAM_PROXY_URL: urls['upstream-proxy'],
    CHANGES_URL: urls.changes,
    OPTIMIZER_URL: urls.optimizer,
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
      return slotOf(service, replica).running.child;
    },
    async kill(service, signal, replica) {
      const chosen = replica === undefined ? replicasOf(service) : [slotOf(service, replica)];
      for (const slot of chosen) {
        slot.held = true;
        clearTimeout(slot.timer);
        // A stopping gateway leaves the front's rotation first, as a terminating pod's endpoint does.
        if (service === 'gateway')
          gatewayProxy?.setServing(replicaUrls.gateway[slot.replica] as string, false);
        const { child } = slot.running;
        if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      }
      await Promise.all(chosen.map((slot) => slot.running.exited));
    },
    async restart(service, replica) {
      const chosen = replica === undefined ? replicasOf(service) : [slotOf(service, replica)];
      await Promise.all(chosen.map((slot) => startReplica(service, slot.env, slot.replica)));
      if (service === 'gateway') {
        for (const slot of chosen)
          gatewayProxy?.setServing(replicaUrls.gateway[slot.replica] as string, true);
      }
    },
    stop: stopAll,
  };
}
