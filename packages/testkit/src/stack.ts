/**
 * The whole product as real processes on this machine: the sandbox, the upstream-proxy, the
 * domain services and the gateway, each started with `node --import tsx <service>/src/main.ts`
 * on loopback. `npm start`, the end-to-end tests and the benchmarks all start it this way.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatePrincipalKeys } from '@adsmcp/runtime/principal';
import { freePort } from './free-port.ts';

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
  process(service: ServiceName): ChildProcess;
  /** Kills a process with `signal` and waits for it to exit (SIGKILL: no drain, as a crash). */
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
}

const KEEP_LINES = 200;

function run(
  service: ServiceName,
  script: string,
  env: Record<string, string>,
  onLine: StackOptions['onLine'],
  nodeArgs: string[] = [],
): Running {
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', script], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
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
  return { child, lines, exited };
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

/** startStack starts every process and resolves when each is listening. */
export async function startStack(opts: StackOptions): Promise<Stack> {
  const secrets = await loadSecrets(opts.dataDir);
  const base = { DATABASE_URL: opts.databaseUrl, LOG_LEVEL: process.env.LOG_LEVEL ?? 'info', ...opts.env };
  const running = new Map<ServiceName, Running>();
  const envs = new Map<ServiceName, Record<string, string>>();
  const urls = {} as Record<ServiceName, string>;
  const start = async (service: ServiceName, env: Record<string, string>) => {
    envs.set(service, env);
    const r = run(
      service,
      `services/${service}/src/main.ts`,
      { ...base, ...env },
      opts.onLine,
      opts.nodeArgs,
    );
    running.set(service, r);
    const port = await listening(service, r);
    urls[service] = `http://127.0.0.1:${port}`;
  };
  const stopAll = async () => {
    const codes: Partial<Record<ServiceName, number | null>> = {};
    for (const name of ['gateway', ...DOMAIN_SERVICES, 'upstream-proxy', 'ads-sandbox'] as const) {
      const r = running.get(name);
      if (r) codes[name] = await stopProcess(r);
    }
    return codes;
  };
  try {
    const grpc = { PORT: '0', PRINCIPAL_PUBLIC_KEY: secrets.principalPublicKey };
    await start('ads-sandbox', { PORT: '0', SANDBOX_ADMIN_TOKEN: secrets.sandboxAdminToken });
    await start('upstream-proxy', {
      ...grpc,
      CHANGES_PUBLIC_KEY: secrets.changesPublicKey,
      UPSTREAM_URL: urls['ads-sandbox'],
      UPSTREAM_CREDENTIAL_KEY: secrets.upstreamCredentialKey,
    });
    const peers = { UPSTREAM_PROXY_URL: urls['upstream-proxy'] };
    await Promise.all([
      start('changes', { ...grpc, ...peers, CHANGES_PRIVATE_KEY: secrets.changesPrivateKey }),
      start('optimizer', { ...grpc, ...peers }),
      start('marketing', { ...grpc, ...peers }),
    ]);
    const gatewayPort = opts.gatewayPort ?? (await freePort());
    const publicUrl = `http://127.0.0.1:${gatewayPort}`;
    await start('gateway', {
      PORT: String(gatewayPort),
      PUBLIC_URL: publicUrl,
      PRINCIPAL_PRIVATE_KEY: secrets.principalPrivateKey,
      UPSTREAM_PROXY_URL: urls['upstream-proxy'],
      CHANGES_URL: urls.changes,
      OPTIMIZER_URL: urls.optimizer,
      MARKETING_URL: urls.marketing,
    });
  } catch (err) {
    await stopAll();
    throw err;
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
      const child = spawn(process.execPath, ['--import', 'tsx', 'services/gateway/src/admin.ts', ...args], {
        cwd: REPO_ROOT,
        env: { ...process.env, ...adminEnv },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
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
    recentOutput: (s) => [...(running.get(s)?.lines ?? [])],
    admin,
    async seedDemo(existingToken) {
      const out = await admin(existingToken ? ['seed-demo', '--token', existingToken] : ['seed-demo']);
      return JSON.parse(out) as SeedResult;
    },
    process(service) {
      const r = running.get(service);
      if (!r) throw new Error(`${service} is not running`);
      return r.child;
    },
    async kill(service, signal) {
      const r = running.get(service);
      if (!r) throw new Error(`${service} is not running`);
      if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill(signal);
      await r.exited;
    },
    async restart(service) {
      const env = envs.get(service);
      if (!env) throw new Error(`${service} was never started`);
      const port = new URL(urls[service]).port;
      await start(service, { ...env, PORT: port });
    },
    stop: stopAll,
  };
}
