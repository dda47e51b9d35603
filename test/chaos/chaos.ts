/**
 * The chaos run: hundreds of approved changes applied while every process of the stack,
 * PostgreSQL included, is killed with SIGKILL at random moments. It checks the product's promise
 * from outside: every change a person approved is applied upstream exactly once, every approved
 * change reaches an end, and an outage never spends an approval.
 *
 * `npm run chaos` runs it (300 changes by default); `npm run chaos -- --help` lists its flags.
 * `test/chaos/chaos.test.ts` runs a short form inside `npm test`. See docs/testing.md, "Chaos test".
 */
import { createHash } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isDeepStrictEqual, parseArgs } from 'node:util';
import { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { createPrincipalSigner, type Principal } from '@adsmcp/runtime/principal';
import { callerKey, createServiceClient } from '@adsmcp/runtime/service-client';
import { dashboardFormPost } from '@adsmcp/testkit/dashboard';
import type { RestartPolicy } from '@adsmcp/testkit/restart-backoff';
import { type SeedResult, type Stack, startStack } from '@adsmcp/testkit/stack';
import { createContextValues } from '@connectrpc/connect';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import pg from 'pg';
import { type KillablePostgres, startKillablePostgres } from './killable-postgres.ts';
import { describe, shuffled, sleep, startKiller } from './killer.ts';

export interface ChaosOptions {
  /** How many changes are prepared, approved and applied. */
  changes: number;
  /** The killer waits a random time in [min, max] ms between two kills. */
  killIntervalMs: { min: number; max: number };
  /** The least number of kills; while apply requests are still waiting the killer goes on, up to twice as many. */
  kills: number;
  /** How many of the kills are long outages: the process is kept down for a while. */
  longOutages: number;
  /** How long a long outage keeps its process down, in [min, max] ms. */
  longOutageMs: { min: number; max: number };
  /** Seeds every random choice (the changes, their order, the kills' targets and times). */
  seed: number;
  /** How long the end waits for every change to leave `applying`. */
  settleTimeoutMs: number;
  /** The changes service's apply lease (APPLY_LEASE_MS): how soon a killed worker's delivery is taken over. */
  applyLeaseMs: number;
  /** Each progress line. */
  log: (line: string) => void;
}

/**
 * Restarts after a kill come quickly and stay quick: the supervisor's growing backoff (tested on
 * its own) would otherwise leave a service that was killed a few times in a row down for 30 s,
 * which makes the run long without reaching any new state.
 */
const CHAOS_RESTART_POLICY: RestartPolicy = { initialDelayMs: 200, maxDelayMs: 2_000, resetAfterMs: 10_000 };

const USAGE = `usage: npm run chaos -- [--changes N] [--kills N] [--kill-interval MIN-MAX] [--long-outages N]
                       [--long-outage MIN-MAX] [--seed N] [--settle-timeout SECONDS] [--apply-lease-ms MS]

  --changes         changes to prepare, approve and apply (1 to 2000; CHAOS_CHANGES; default 300)
  --kills           the least number of kills, up to twice as many while apply requests wait (0 to 10000;
                    CHAOS_KILLS; default half the changes)
  --kill-interval   milliseconds between two kills, a range such as 500-3000 (CHAOS_KILL_INTERVAL_MS;
                    default 500-3000)
  --long-outages    how many kills keep the sandbox, the upstream-proxy or PostgreSQL down for a long
                    outage (0 to 100; CHAOS_LONG_OUTAGES; default one per 100 changes, at least one)
  --long-outage     seconds a long outage lasts, a range (CHAOS_LONG_OUTAGE_S; default 60-90)
  --seed            the seed of every random choice (CHAOS_SEED; default a random one, printed)
  --settle-timeout  seconds the end waits for every change to leave applying (CHAOS_SETTLE_TIMEOUT_S;
                    default 180)
  --apply-lease-ms  the changes service's APPLY_LEASE_MS (CHAOS_APPLY_LEASE_MS; default 5000)`;

/** A flag or variable that is not what it should be (naming it and the rule), or --help. */
export class ChaosUsageError extends Error {
  constructor(
    message: string,
    readonly help = false,
  ) {
    super(message);
  }
}

function wholeNumber(name: string, raw: string, min: number, max: number): number {
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isInteger(n) || n < min || n > max)
    throw new ChaosUsageError(`${name} must be a whole number from ${min} to ${max} (got "${raw}")`);
  return n;
}

/** The options from command-line flags, then CHAOS_* variables, then defaults. */
export function chaosOptionsFrom(
  argv: string[],
  env: Record<string, string | undefined>,
  log: (line: string) => void,
): ChaosOptions {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        changes: { type: 'string' },
        kills: { type: 'string' },
        'kill-interval': { type: 'string' },
        'long-outages': { type: 'string' },
        'long-outage': { type: 'string' },
        seed: { type: 'string' },
        'settle-timeout': { type: 'string' },
        'apply-lease-ms': { type: 'string' },
        help: { type: 'boolean' },
      },
    }));
  } catch (err) {
    throw new ChaosUsageError(`${err instanceof Error ? err.message : String(err)}\n${USAGE}`);
  }
  if (values.help) throw new ChaosUsageError(USAGE, true);
  const pick = (flag: string, variable: string): [string, string] | undefined => {
    const v = values[flag];
    if (typeof v === 'string') return [`--${flag}`, v];
    const e = env[variable];
    return e === undefined || e === '' ? undefined : [variable, e];
  };
  const num = (flag: string, variable: string, min: number, max: number, fallback: number) => {
    const given = pick(flag, variable);
    return given === undefined ? fallback : wholeNumber(given[0], given[1], min, max);
  };
  const range = (flag: string, variable: string, unit: string, lo: number, hi: number, fallback: string) => {
    const [name, raw] = pick(flag, variable) ?? [`--${flag}`, fallback];
    const m = /^(\d+)-(\d+)$/.exec(raw.trim());
    const min = m ? Number(m[1]) : Number.NaN;
    const max = m ? Number(m[2]) : Number.NaN;
    if (!m || min < lo || max > hi || min > max)
      throw new ChaosUsageError(
        `${name} must be a range of ${unit} MIN-MAX with ${lo} <= MIN <= MAX <= ${hi}, such as ${fallback} (got "${raw}")`,
      );
    return { min, max };
  };
  const changes = num('changes', 'CHAOS_CHANGES', 1, 2000, 300);
  const longOutageS = range('long-outage', 'CHAOS_LONG_OUTAGE_S', 'seconds', 1, 600, '60-90');
  return {
    changes,
    kills: num('kills', 'CHAOS_KILLS', 0, 10_000, Math.ceil(changes / 2)),
    killIntervalMs: range('kill-interval', 'CHAOS_KILL_INTERVAL_MS', 'milliseconds', 50, 600_000, '500-3000'),
    longOutages: num('long-outages', 'CHAOS_LONG_OUTAGES', 0, 100, Math.max(1, Math.round(changes / 100))),
    longOutageMs: { min: longOutageS.min * 1000, max: longOutageS.max * 1000 },
    seed: num('seed', 'CHAOS_SEED', 0, 2 ** 31 - 1, Math.floor(Math.random() * 2 ** 31)),
    settleTimeoutMs: num('settle-timeout', 'CHAOS_SETTLE_TIMEOUT_S', 1, 3600, 180) * 1000,
    applyLeaseMs: num('apply-lease-ms', 'CHAOS_APPLY_LEASE_MS', 1000, 600_000, 5000),
    log,
  };
}

/**
 * The run's random numbers, all drawn from the seed: SHA-256 of the seed and a counter. Node has
 * no seeded generator; a hash of a counter is one from node:crypto, with no generator algorithm
 * of our own and no dependency for it.
 */
export function seededRandom(seed: number): () => number {
  let counter = 0;
  return () => {
    const digest = createHash('sha256').update(`${seed}:${counter++}`).digest();
    return digest.readUIntBE(0, 6) / 2 ** 48;
  };
}

/** A message with its ids and numbers blanked, so that errors of one kind are counted together. */
function errorKind(message: string): string {
  return (
    message
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, '<id>')
      .replace(/\b(ad|adg|cmp|ag|acct|act)_[A-Za-z0-9]+/g, '<$1>')
      .replace(/127\.0\.0\.1:\d+/g, '127.0.0.1:<port>')
      .replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, '<time>')
      // Short numbers stay: they are HTTP statuses and counts of attempts.
      .replace(/\d{4,}/g, 'N')
      .slice(0, 240)
  );
}

type CallAnswer =
  | { kind: 'result'; isError: boolean; data: Record<string, unknown> }
  | { kind: 'thrown'; message: string };

/**
 * The agent: the official MCP client (v2, protocol 2026-07-28), connected again after a call
 * failed below the tool level (the gateway was down or went down mid-call).
 */
class Agent {
  private client: Promise<Client> | undefined;
  /** Clients replaced after a failure: closed at the end, so that calls still on them finish. */
  private readonly retired: Promise<Client>[] = [];
  constructor(
    private readonly mcpUrl: string,
    private readonly token: string,
  ) {}

  private connect(): Promise<Client> {
    this.client ??= (async () => {
      const client = new Client(
        { name: 'chaos-agent', version: '1.0.0' },
        { versionNegotiation: { mode: { pin: '2026-07-28' } } },
      );
      const token = this.token;
      await client.connect(
        new StreamableHTTPClientTransport(new URL(this.mcpUrl), {
          authProvider: { token: async () => token },
        }),
      );
      // Listed once, so that the client checks each result against the tool's published schema.
      await client.listTools();
      return client;
    })();
    return this.client;
  }

  async call(name: string, args: Record<string, unknown>, timeoutMs = 30_000): Promise<CallAnswer> {
    const pending = this.connect();
    try {
      const client = await pending;
      const res = await client.callTool({ name, arguments: args }, { timeout: timeoutMs });
      return {
        kind: 'result',
        isError: res.isError === true,
        data: (res.structuredContent ?? {}) as Record<string, unknown>,
      };
    } catch (err) {
      if (this.client === pending) {
        this.client = undefined;
        this.retired.push(pending);
      }
      return { kind: 'thrown', message: describe(err) };
    }
  }

  async close(): Promise<void> {
    const all = [...this.retired, ...(this.client ? [this.client] : [])];
    this.client = undefined;
    await Promise.all(all.map((p) => p.then((c) => c.close()).catch(() => undefined)));
  }
}

/** The error of a tool result, or a thrown call's message. */
function answerError(a: CallAnswer): string {
  if (a.kind === 'thrown') return `thrown: ${a.message}`;
  const e = a.data.error as { code?: string; message?: string } | undefined;
  return `${e?.code ?? 'no code'}: ${e?.message ?? JSON.stringify(a.data).slice(0, 200)}`;
}

interface ChangeView {
  change_id: string;
  account_id: string;
  status: string;
  digest: string;
  operation: { method: string; path: string; body: unknown };
  error: string | null;
}

type ChangeKind = 'ad update' | 'ad group update' | 'ad group create';

interface Planned {
  kind: ChangeKind;
  account: Account;
  /** The tool and its arguments. */
  tool: string;
  args: Record<string, unknown>;
  /** The name the object has once the change is applied. */
  name: string;
  /** The updated object's platform id (none for a create). */
  objectId?: string;
}

interface Tracked extends Planned {
  changeId: string;
  digest: string;
  operation: ChangeView['operation'];
  /** What the apply request was last answered (a status, or the error that ended it). */
  applyAnswer?: string;
  applyAttempts: number;
  /** Seen failed at the end, with its error, before being applied again. */
  failedBefore?: string;
  /** What applying it again answered. */
  reapplyAnswer?: string;
  status?: string;
  error?: string | null;
}

interface Account {
  account_id: string;
  upstream_account_id: string;
  name: string;
}

export interface ChaosReport {
  seed: number;
  options: Omit<ChaosOptions, 'log'>;
  changes: Record<ChangeKind, number>;
  accounts: number;
  kills: Record<string, number>;
  /** The long outages, by process. */
  longOutages: Record<string, number>;
  /** Kills made while at least one apply request was waiting for its answer. */
  killsDuringApplyRequests: number;
  /**
   * Exits the supervisor saw that no kill of ours explains, by process, exit and last words, with
   * how often (such as a service that could not start while PostgreSQL was down).
   */
  exitsWithoutKill: Record<string, number>;
  restarts: Record<string, number>;
  /** Errors the agent saw, by kind, with how often. */
  errors: Record<string, number>;
  finalStatuses: Record<string, number>;
  /** Changes that had failed at the end and were applied again, with the error and the outcome. */
  reapplied: { change_id: string; error: string; answer: string; status: string }[];
  ledger: {
    entries: number;
    changesWithOneEntry: number;
    missing: number;
    duplicated: number;
    foreign: number;
  };
  durationsS: Record<string, number>;
  /** Every broken promise, one line each: empty when the run passed. */
  violations: string[];
  /** Where the processes' logs were written (kept when there are violations). */
  logDir: string;
}

/** Runs `fn` on every item, `concurrency` at a time. */
async function eachLimited<T>(items: readonly T[], concurrency: number, fn: (t: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

/** A counter keyed by text. */
function bump(map: Record<string, number>, key: string, by = 1): void {
  map[key] = (map[key] ?? 0) + by;
}

export async function runChaos(opts: ChaosOptions): Promise<ChaosReport> {
  const log = opts.log;
  const random = seededRandom(opts.seed);
  const t0 = Date.now();
  const durations: Record<string, number> = {};
  const mark = (phase: string, since: number) => {
    durations[phase] = Math.round((Date.now() - since) / 100) / 10;
  };
  log(
    `chaos: seed ${opts.seed}, ${opts.changes} changes, at least ${opts.kills} kills every ${opts.killIntervalMs.min}-${opts.killIntervalMs.max} ms, ${opts.longOutages} long outages (rerun with --seed ${opts.seed})`,
  );

  const runDir = await mkdtemp(join(tmpdir(), `adsmcp-chaos-${opts.seed}-`));
  const logDir = join(runDir, 'logs');
  await mkdir(logDir);
  const logs = new Map<string, WriteStream>();
  const logTo = (name: string, line: string) => {
    let s = logs.get(name);
    if (s === undefined) {
      s = createWriteStream(join(logDir, `${name}.log`), { flags: 'a' });
      logs.set(name, s);
    }
    s.write(`${line}\n`);
  };

  const kills: Record<string, number> = {};
  const longOutages: Record<string, number> = {};
  const restarts: Record<string, number> = {};
  const errors: Record<string, number> = {};
  const exitsWithoutKill: Record<string, number> = {};
  /** Kills of each service whose exit the supervisor has not reported yet. */
  const killsUnreported: Record<string, number> = {};
  const violations: string[] = [];
  let passed = false;

  const pgDir = join(runDir, 'pg');
  let postgres: KillablePostgres | undefined;
  let stack: Stack | undefined;
  const live = () => stack;
  let agent: Agent | undefined;
  try {
    const startAt = Date.now();
    postgres = await startKillablePostgres(pgDir);
    const admin = new pg.Client({ connectionString: postgres.adminUrl });
    await admin.connect();
    await admin.query('CREATE DATABASE chaos');
    await admin.end();
    const databaseUrl = postgres.adminUrl.replace(/\/postgres$/, '/chaos');
    stack = await startStack({
      databaseUrl,
      dataDir: join(runDir, 'stack'),
      env: {
        APPLY_LEASE_MS: String(opts.applyLeaseMs),
        // Every apply request of the run comes from one credential, many at once.
        MCP_RATE_PER_SECOND: '10000',
        MCP_RATE_BURST: '100000',
      },
      supervise: CHAOS_RESTART_POLICY,
      onLine: (service, line) => logTo(service, line),
      onSupervisor: (service, message) => {
        logTo('supervisor', `${new Date().toISOString()} ${service}: ${message}`);
        if (message.startsWith('restarted')) bump(restarts, service);
        if (message.startsWith('exited unexpectedly')) {
          if ((killsUnreported[service] ?? 0) > 0 && message.includes('SIGKILL')) {
            bump(killsUnreported, service, -1);
          } else {
            // Its last words say why (such as a start while PostgreSQL was down).
            const why = live()
              ?.recentOutput(service)
              .filter((l) => !l.startsWith('{') && !l.startsWith(' '))
              .at(-1);
            const exit = message.split(';')[0] ?? message;
            const kind = `${service} ${exit}${why ? `: ${errorKind(why.replace(`${service}: `, ''))}` : ''}`;
            // Each kind is told once as it happens; the report counts them.
            if (exitsWithoutKill[kind] === undefined) log(`! ${kind} (not one of our kills)`);
            bump(exitsWithoutKill, kind);
          }
        }
      },
    });
    const seed = await stack.seedDemo();
    agent = new Agent(stack.mcpUrl, seed.token);
    mark('startup', startAt);
    log(`stack up in ${durations.startup} s (logs: ${logDir})`);

    // ---- plan and prepare -------------------------------------------------------------------
    const prepareAt = Date.now();
    const accounts = await accountsFor(opts.changes, stack, seed, agent, log);
    const plan = await planChanges(opts.changes, accounts, agent, random, opts.seed);
    // Kept in the seeded plan's order, whatever order the prepares end in.
    const prepared: (Tracked | undefined)[] = plan.map(() => undefined);
    await eachLimited(
      plan.map((p, i) => ({ p, i })),
      4,
      async ({ p, i }) => {
        const a = await (agent as Agent).call(p.tool, p.args);
        if (a.kind !== 'result' || a.isError)
          throw new Error(`${p.tool} on a healthy stack failed: ${answerError(a)}`);
        const c = a.data as unknown as ChangeView;
        prepared[i] = {
          ...p,
          changeId: c.change_id,
          digest: c.digest,
          operation: c.operation,
          applyAttempts: 0,
        };
      },
    );
    const tracked = prepared.filter((c): c is Tracked => c !== undefined);
    mark('prepare', prepareAt);
    log(`prepared ${tracked.length} changes in ${durations.prepare} s`);

    // ---- approve, as a person in the dashboard ------------------------------------------------
    const approveAt = Date.now();
    await approveAll(stack, seed, tracked);
    mark('approve', approveAt);
    log(`approved ${tracked.length} changes in the dashboard in ${durations.approve} s`);

    // ---- apply while the killer runs -------------------------------------------------------
    const applyAt = Date.now();
    let inFlight = 0;
    let killsDuringApplyRequests = 0;
    let applyRequestsDone = false;
    const killer = startKiller({
      stack,
      postgres,
      random,
      opts,
      log,
      inFlight: () => inFlight,
      applyRequestsDone: () => applyRequestsDone,
      onKill: (target) => {
        bump(kills, target);
        if (inFlight > 0) killsDuringApplyRequests++;
      },
      onSignalled: (service) => bump(killsUnreported, service),
      onLongOutage: (target) => bump(longOutages, target),
    });

    // The requests are spread over the time the kills take, so that kills land among them.
    const meanInterval = (opts.killIntervalMs.min + opts.killIntervalMs.max) / 2;
    const pace = (opts.kills * meanInterval) / tracked.length;
    const applyDeadline = Date.now() + Math.max(10 * 60_000, 4 * opts.kills * meanInterval);
    await Promise.all(
      tracked.map(async (c, i) => {
        await sleep(i * pace);
        inFlight++;
        try {
          await requestApply(agent as Agent, c, applyDeadline, errors);
        } finally {
          inFlight--;
        }
      }),
    );
    applyRequestsDone = true;
    log(`every apply request was answered after ${Math.round((Date.now() - applyAt) / 1000)} s`);
    await killer.done;
    mark('apply', applyAt);
    log(`killer stopped after ${Object.values(kills).reduce((s, n) => s + n, 0)} kills`);

    // ---- settle ---------------------------------------------------------------------------
    const settleAt = Date.now();
    await waitHealthy(stack, agent, seed, postgres);
    await waitSettled(agent, tracked, opts.settleTimeoutMs, log);
    const failed = tracked.filter((c) => c.status === 'failed');
    for (const c of failed) {
      c.failedBefore = c.error ?? '(no error given)';
      c.reapplyAnswer = await reapply(agent, c, errors);
    }
    if (failed.length > 0) await waitSettled(agent, tracked, Math.min(opts.settleTimeoutMs, 60_000), log);
    mark('settle', settleAt);

    // ---- check ----------------------------------------------------------------------------
    const finalStatuses: Record<string, number> = {};
    for (const c of tracked) bump(finalStatuses, c.status ?? 'unknown');
    for (const c of tracked) {
      if (c.status === 'applied') continue;
      const before = c.failedBefore
        ? ` (failed first: ${c.failedBefore}; applying it again answered ${c.reapplyAnswer})`
        : '';
      violations.push(
        `change ${c.changeId} (${c.kind}) ended ${c.status ?? 'unread'}${c.error ? `: ${c.error}` : ''}${before}`,
      );
    }
    const ledger = await checkLedger(stack, accounts, tracked, violations);
    await checkLiveObjects(agent, accounts, tracked, violations);

    const changes = { 'ad update': 0, 'ad group update': 0, 'ad group create': 0 };
    for (const c of tracked) changes[c.kind]++;
    durations.total = Math.round((Date.now() - t0) / 100) / 10;
    const { log: _log, ...options } = opts;
    passed = violations.length === 0;
    return {
      seed: opts.seed,
      options,
      changes,
      accounts: accounts.length,
      kills,
      longOutages,
      killsDuringApplyRequests,
      exitsWithoutKill,
      restarts,
      errors,
      finalStatuses,
      reapplied: failed.map((c) => ({
        change_id: c.changeId,
        error: c.failedBefore ?? '',
        answer: c.reapplyAnswer ?? '',
        status: c.status ?? 'unread',
      })),
      ledger,
      durationsS: durations,
      violations,
      logDir,
    };
  } finally {
    await agent?.close();
    await stack?.stop().catch(() => undefined);
    await postgres?.stop().catch(() => undefined);
    await Promise.all([...logs.values()].map((s) => new Promise((resolve) => s.end(resolve))));
    // The processes' logs are kept when something went wrong, for whoever looks into it.
    if (passed) await rm(runDir, { recursive: true, force: true });
    else await rm(join(runDir, 'stack'), { recursive: true, force: true });
  }
}

/**
 * The accounts the changes go to: the demo's two, and as many more as the count needs (each
 * account offers about 20 distinct objects), created on the sandbox and connected as the
 * operator's command connects them.
 */
async function accountsFor(
  count: number,
  stack: Stack,
  seed: SeedResult,
  agent: Agent,
  log: (line: string) => void,
): Promise<Account[]> {
  const accounts: Account[] = seed.accounts.map((a) => ({
    account_id: a.account_id,
    upstream_account_id: a.upstream_account_id,
    name: a.name,
  }));
  const needed = Math.ceil(count / PER_ACCOUNT);
  if (needed <= accounts.length) return accounts.slice(0, needed);
  const signer = await createPrincipalSigner(stack.secrets.principalPrivateKey);
  const operator: Principal = {
    workspaceId: seed.workspaceId,
    credentialId: 'operator:chaos',
    userId: null,
    role: 'admin',
    scopes: ['read', 'write'],
    via: 'operator',
  };
  const upstream = createServiceClient(
    UpstreamService,
    stack.urls['upstream-proxy'],
    'upstream-proxy',
    signer,
  );
  for (let i = accounts.length; i < needed; i++) {
    const name = `Chaos account ${i + 1}`;
    const res = await fetch(`${stack.urls['ads-sandbox']}/_sandbox/accounts`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${stack.secrets.sandboxAdminToken}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ name, currency: 'USD', time_zone: 'America/New_York' }),
    });
    if (!res.ok) throw new Error(`the sandbox refused an account: ${res.status} ${await res.text()}`);
    const created = (await res.json()) as { account_id: string; credential: string };
    const { account } = await upstream.createConnection(
      {
        name,
        currency: 'USD',
        timeZone: 'America/New_York',
        canWrite: true,
        upstreamAccountId: created.account_id,
        upstreamCredential: created.credential,
      },
      { contextValues: createContextValues().set(callerKey, operator) },
    );
    if (!account) throw new Error('the upstream-proxy connected an account but did not return it');
    accounts.push({ account_id: account.accountId, upstream_account_id: created.account_id, name });
  }
  // The agent sees them as any MCP client would.
  const listed = await agent.call('ads_list_accounts', {});
  if (listed.kind !== 'result' || listed.isError)
    throw new Error(`ads_list_accounts: ${answerError(listed)}`);
  log(`${accounts.length} ad accounts`);
  return accounts;
}

/** Ad group creates per account; with its 12 ads and 4 ad groups about 20 distinct objects. */
const CREATES_PER_ACCOUNT = 4;
const PER_ACCOUNT = 18;

async function ok(
  agent: Agent,
  tool: string,
  args: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const a = await agent.call(tool, args);
  if (a.kind !== 'result' || a.isError) throw new Error(`${tool} failed: ${answerError(a)}`);
  return a.data;
}

interface Listed {
  id: string;
  name: string;
  status: string;
}

/** Lists a platform collection through its tool, every page, limit 500. */
async function listAll(agent: Agent, tool: string, key: string, accountId: string): Promise<Listed[]> {
  const data = await ok(agent, tool, { account_id: accountId, limit: 500 });
  const items = data[key];
  if (!Array.isArray(items))
    throw new Error(`${tool} answered without ${key}: ${JSON.stringify(data).slice(0, 300)}`);
  return items as Listed[];
}

/**
 * `count` changes to distinct objects, in a seeded order: ad updates and ad group updates (each
 * object once, so that no two changes race for one object) and ad group creates, each giving the
 * object a name of its own.
 */
async function planChanges(
  count: number,
  accounts: Account[],
  agent: Agent,
  random: () => number,
  seed: number,
): Promise<Planned[]> {
  const options: Omit<Planned, 'name' | 'args'>[] = [];
  const campaignOf = new Map<string, string>();
  for (const account of accounts) {
    const [ads, groups, campaigns] = await Promise.all([
      listAll(agent, 'ads_list_ads', 'ads', account.account_id),
      listAll(agent, 'ads_list_ad_groups', 'ad_groups', account.account_id),
      listAll(agent, 'ads_list_campaigns', 'campaigns', account.account_id),
    ]);
    const campaign = campaigns.find((c) => c.status !== 'archived');
    if (campaign) campaignOf.set(account.account_id, campaign.id);
    for (const ad of ads.filter((a) => a.status !== 'archived'))
      options.push({ kind: 'ad update', account, tool: 'ads_update_ad', objectId: ad.id });
    for (const g of groups.filter((g) => g.status !== 'archived'))
      options.push({ kind: 'ad group update', account, tool: 'ads_update_ad_group', objectId: g.id });
    if (campaign)
      for (let i = 0; i < CREATES_PER_ACCOUNT; i++)
        options.push({ kind: 'ad group create', account, tool: 'ads_create_ad_group' });
  }
  if (options.length < count)
    throw new Error(`the accounts offer ${options.length} distinct objects for ${count} changes`);
  return shuffled(options, random)
    .slice(0, count)
    .map((o, i) => {
      const name = `Chaos ${seed} change ${i + 1}`;
      const accountId = o.account.account_id;
      if (o.kind === 'ad update')
        return { ...o, name, args: { account_id: accountId, ad_id: o.objectId, body: { name } } };
      if (o.kind === 'ad group update')
        return { ...o, name, args: { account_id: accountId, ad_group_id: o.objectId, body: { name } } };
      return {
        ...o,
        name,
        args: {
          account_id: accountId,
          body: {
            campaign_id: campaignOf.get(accountId),
            name,
            status: 'paused',
            bidding_config: { billing_event_type: 'click' },
          },
        },
      };
    });
}

/**
 * Approves every change as the demo's person does: signed in to the dashboard, each change's
 * review page read (its digest must be the prepared one), then its Approve form posted.
 */
async function approveAll(stack: Stack, seed: SeedResult, tracked: Tracked[]): Promise<void> {
  const gateway = stack.gatewayUrl;
  const signIn = await fetch(`${gateway}/dashboard/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { origin: new URL(gateway).origin, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      email: seed.dashboardUser,
      password: seed.dashboardPassword ?? '',
    }).toString(),
  });
  const cookie = signIn.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .find((c) => c?.startsWith('adsmcp_session='));
  if (signIn.status !== 303 || !cookie)
    throw new Error(
      `the dashboard sign-in answered ${signIn.status}: ${(await signIn.text()).slice(0, 300)}`,
    );
  await eachLimited(tracked, 4, async (c) => {
    const page = await fetch(`${gateway}/dashboard/changes/${c.changeId}`, { headers: { cookie } });
    const html = await page.text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1];
    const shown = /id="digest"[^>]*>([0-9a-f]{64})</.exec(html)?.[1];
    if (page.status !== 200 || !csrf || shown !== c.digest)
      throw new Error(
        `the review page of ${c.changeId} answered ${page.status} with digest ${shown ?? 'none'} (prepared ${c.digest})`,
      );
    const res = await dashboardFormPost(gateway, `/dashboard/changes/${c.changeId}/approve`, cookie, {
      csrf,
      digest: shown,
    });
    if (res.status !== 303)
      throw new Error(`approving ${c.changeId} answered ${res.status}: ${(await res.text()).slice(0, 500)}`);
  });
}

/**
 * Asks ads_apply_change until the request is taken: answered with the change (applying, applied,
 * or failed), or refused because it already moved on (an earlier request whose answer was lost).
 * A call that could not be made or was answered with an outage is tried again.
 */
async function requestApply(
  agent: Agent,
  c: Tracked,
  deadline: number,
  errors: Record<string, number>,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    c.applyAttempts = attempt;
    const a = await agent.call('ads_apply_change', { change_id: c.changeId, digest: c.digest }, 20_000);
    if (a.kind === 'result' && !a.isError) {
      c.applyAnswer = String(a.data.status);
      return;
    }
    const error = answerError(a);
    bump(errors, `ads_apply_change ${errorKind(error)}`);
    if (a.kind === 'result' && (a.data.error as { code?: string } | undefined)?.code === 'apply_failed') {
      c.applyAnswer = `failed: ${error}`;
      return;
    }
    if (a.kind === 'result') {
      // Refused: perhaps because an earlier request did move it and its answer was lost.
      const seen = await agent.call('ads_get_change', { change_id: c.changeId });
      if (seen.kind === 'result' && !seen.isError && seen.data.status !== 'approved') {
        c.applyAnswer = `${String(seen.data.status)} (after: ${error})`;
        return;
      }
    }
    if (Date.now() > deadline) {
      c.applyAnswer = `never taken: ${error}`;
      return;
    }
    await sleep(Math.min(2000, 100 * 2 ** Math.min(attempt, 5)) * (0.5 + Math.random() / 2));
  }
}

/** Waits until every process answers: PostgreSQL, the sandbox, and the gateway's tools through the services. */
async function waitHealthy(stack: Stack, agent: Agent, seed: SeedResult, postgres: KillablePostgres) {
  const deadline = Date.now() + 180_000;
  if (!postgres.running()) await postgres.restart();
  const account = seed.accounts[0];
  for (;;) {
    const sandbox = await fetch(
      `${stack.urls['ads-sandbox']}/_sandbox/ledger?account_id=${encodeURIComponent(account?.upstream_account_id ?? '')}`,
      { headers: { authorization: `Bearer ${stack.secrets.sandboxAdminToken}` } },
    ).then(
      (r) => r.status === 200,
      () => false,
    );
    const changes = await agent.call('ads_list_changes', { limit: 1 });
    const upstream = await agent.call('ads_list_ads', { account_id: account?.account_id, limit: 1 });
    const serving = (a: CallAnswer) => a.kind === 'result' && !a.isError;
    if (sandbox && serving(changes) && serving(upstream)) return;
    if (Date.now() > deadline)
      throw new Error(
        `the stack did not recover within 180 s after the last kill: ${answerError(changes)}; ${answerError(upstream)}`,
      );
    await sleep(500);
  }
}

/** Reads every change's status through ads_list_changes until none is applying, or the time is up. */
async function waitSettled(agent: Agent, tracked: Tracked[], timeoutMs: number, log: (line: string) => void) {
  const deadline = Date.now() + timeoutMs;
  const byId = new Map(tracked.map((c) => [c.changeId, c]));
  let lastLog = 0;
  for (;;) {
    for (let offset = 0; ; ) {
      const a = await agent.call('ads_list_changes', { limit: 100, offset });
      if (a.kind !== 'result' || a.isError) break; // read again on the next round
      for (const v of a.data.changes as ChangeView[]) {
        const c = byId.get(v.change_id);
        if (c) {
          c.status = v.status;
          c.error = v.error;
        }
      }
      const next = a.data.next_offset;
      if (typeof next !== 'number') break;
      offset = next;
    }
    const applying = tracked.filter((c) => c.status === 'applying' || c.status === undefined).length;
    if (applying === 0) return;
    if (Date.now() > deadline) {
      log(`${applying} changes still applying after ${timeoutMs / 1000} s`);
      return;
    }
    if (Date.now() - lastLog > 15_000) {
      lastLog = Date.now();
      log(`waiting: ${applying} changes applying`);
    }
    await sleep(1000);
  }
}

/** Applies a failed change again (the way on for an unknown outcome); returns what the tool answered. */
async function reapply(agent: Agent, c: Tracked, errors: Record<string, number>): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    const a = await agent.call('ads_apply_change', { change_id: c.changeId, digest: c.digest }, 20_000);
    if (a.kind === 'result' && !a.isError) return String(a.data.status);
    const error = answerError(a);
    bump(errors, `ads_apply_change again ${errorKind(error)}`);
    if (a.kind === 'result' || attempt >= 10) return error;
    await sleep(500);
  }
}

interface LedgerEntry {
  method: string;
  path: string;
  idempotency_key: string | null;
  request_body: unknown;
}

/** Every mutation the sandbox applied to the run's accounts, against the approved changes. */
async function checkLedger(
  stack: Stack,
  accounts: Account[],
  tracked: Tracked[],
  violations: string[],
): Promise<ChaosReport['ledger']> {
  const byKey = new Map<string, LedgerEntry[]>();
  let total = 0;
  for (const account of accounts) {
    const res = await fetch(
      `${stack.urls['ads-sandbox']}/_sandbox/ledger?account_id=${encodeURIComponent(account.upstream_account_id)}`,
      { headers: { authorization: `Bearer ${stack.secrets.sandboxAdminToken}` } },
    );
    if (res.status !== 200) throw new Error(`the sandbox ledger answered ${res.status}`);
    const { entries } = (await res.json()) as { entries: LedgerEntry[] };
    total += entries.length;
    for (const e of entries) {
      const key = e.idempotency_key ?? '(no key)';
      byKey.set(key, [...(byKey.get(key) ?? []), e]);
    }
  }
  const ours = new Set(tracked.map((c) => `change-${c.changeId}`));
  let one = 0;
  let missing = 0;
  let duplicated = 0;
  let foreign = 0;
  for (const c of tracked) {
    const entries = byKey.get(`change-${c.changeId}`) ?? [];
    if (entries.length === 1) one++;
    if (entries.length === 0) missing++;
    // A change that did not end applied is listed once already, by its status.
    if (entries.length === 0 && c.status === 'applied')
      violations.push(
        `change ${c.changeId} (${c.kind}) is applied, but the platform's ledger has no mutation of it`,
      );
    if (entries.length > 0 && c.status !== 'applied')
      violations.push(`change ${c.changeId} (${c.kind}) ended ${c.status}, but the platform applied it`);
    if (entries.length > 1) {
      duplicated++;
      violations.push(`change ${c.changeId} (${c.kind}) was applied ${entries.length} times`);
    }
    for (const e of entries) {
      if (
        e.method !== c.operation.method ||
        e.path !== c.operation.path ||
        !isDeepStrictEqual(e.request_body, c.operation.body)
      )
        violations.push(
          `change ${c.changeId}: the ledger has ${e.method} ${e.path} ${JSON.stringify(e.request_body)}, not the reviewed ${c.operation.method} ${c.operation.path} ${JSON.stringify(c.operation.body)}`,
        );
    }
  }
  for (const [key, entries] of byKey) {
    if (ours.has(key)) continue;
    foreign += entries.length;
    for (const e of entries)
      violations.push(
        `the ledger has a mutation that is no approved change: ${e.method} ${e.path} under key ${key}`,
      );
  }
  return { entries: total, changesWithOneEntry: one, missing, duplicated, foreign };
}

/** What the platform shows now: each updated object under its new name, each created ad group once. */
async function checkLiveObjects(agent: Agent, accounts: Account[], tracked: Tracked[], violations: string[]) {
  for (const account of accounts) {
    const mine = tracked.filter((c) => c.account.account_id === account.account_id && c.status === 'applied');
    if (mine.length === 0) continue;
    const [ads, groups] = await Promise.all([
      listAll(agent, 'ads_list_ads', 'ads', account.account_id),
      listAll(agent, 'ads_list_ad_groups', 'ad_groups', account.account_id),
    ]);
    for (const c of mine) {
      if (c.kind === 'ad group create') {
        const n = groups.filter((g) => g.name === c.name).length;
        if (n !== 1)
          violations.push(
            `created ad group "${c.name}" (change ${c.changeId}) is on the platform ${n} times`,
          );
        continue;
      }
      const live = (c.kind === 'ad update' ? ads : groups).find((o) => o.id === c.objectId);
      if (live?.name !== c.name)
        violations.push(
          `${c.kind} ${c.changeId}: ${c.objectId} is named "${live?.name}" on the platform, not "${c.name}"`,
        );
    }
  }
}

/** The report as people read it. */
export function formatReport(r: ChaosReport): string {
  const list = (m: Record<string, number>) =>
    Object.entries(m)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${v}`)
      .join(', ') || 'none';
  const lines = [
    `chaos report (seed ${r.seed}; rerun with --seed ${r.seed} --changes ${r.options.changes} --kills ${r.options.kills} --kill-interval ${r.options.killIntervalMs.min}-${r.options.killIntervalMs.max} --long-outages ${r.options.longOutages} --long-outage ${r.options.longOutageMs.min / 1000}-${r.options.longOutageMs.max / 1000})`,
    `  changes:        ${list(r.changes)} on ${r.accounts} accounts`,
    `  kills:          ${list(r.kills)} (${r.killsDuringApplyRequests} while apply requests were waiting)`,
    `  long outages:   ${list(r.longOutages)} (${r.options.longOutageMs.min / 1000}-${r.options.longOutageMs.max / 1000} s each)`,
    `  restarts:       ${list(r.restarts)}`,
    `  final statuses: ${list(r.finalStatuses)}`,
    `  ledger:         ${r.ledger.entries} mutations; ${r.ledger.changesWithOneEntry} changes with exactly one, ${r.ledger.missing} with none, ${r.ledger.duplicated} with more, ${r.ledger.foreign} not of an approved change`,
    `  durations (s):  ${Object.entries(r.durationsS)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
    '  errors the agent saw:',
    ...Object.entries(r.errors)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `    ${String(v).padStart(5)} × ${k}`),
  ];
  if (Object.keys(r.exitsWithoutKill).length > 0)
    lines.push(
      '  exits no kill explains:',
      ...Object.entries(r.exitsWithoutKill)
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => `    ${String(v).padStart(5)} × ${k}`),
    );
  if (r.reapplied.length > 0)
    lines.push(
      '  failed at the end, then applied again:',
      ...r.reapplied.map((x) => `    ${x.change_id}: ${x.error} → again: ${x.answer} → ${x.status}`),
    );
  lines.push(
    r.violations.length === 0
      ? '  PASSED: every approved change applied exactly once'
      : `  FAILED: ${r.violations.length} broken promises (process logs kept in ${r.logDir}):`,
    ...r.violations.map((v) => `    ${v}`),
  );
  return lines.join('\n');
}

async function main(): Promise<number> {
  const log = (line: string) => process.stdout.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);
  let opts: ChaosOptions;
  try {
    opts = chaosOptionsFrom(process.argv.slice(2), process.env, log);
  } catch (err) {
    if (err instanceof ChaosUsageError) {
      (err.help ? process.stdout : process.stderr).write(`${err.message}\n`);
      return err.help ? 0 : 2;
    }
    throw err;
  }
  const report = await runChaos(opts);
  process.stdout.write(`${formatReport(report)}\n`);
  return report.violations.length === 0 ? 0 : 1;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(
        `the chaos run could not finish: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
      );
      process.exit(1);
    },
  );
}
