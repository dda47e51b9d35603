/**
 * The chaos run's killer: SIGKILL to a random process of the stack at random intervals, while
 * changes are being applied. The stack's supervisor starts a killed service again; PostgreSQL is
 * started again here, on the same data and port. A few kills are long outages: the process is
 * kept down for a minute or more, longer than the apply worker's retries last.
 */
import type { ServiceName, Stack } from '@adsmcp/testkit/stack';
import type { KillablePostgres } from './killable-postgres.ts';

export type Target = ServiceName | 'postgres';

const TARGETS: readonly { name: Target; weight: number }[] = [
  // The apply path is where approvals can be lost or doubled: it is hit most.
  { name: 'changes', weight: 3 },
  { name: 'upstream-proxy', weight: 2 },
  { name: 'ads-sandbox', weight: 2 },
  { name: 'postgres', weight: 2 },
  { name: 'gateway', weight: 1 },
  { name: 'marketing', weight: 1 },
  { name: 'optimizer', weight: 1 },
];

/**
 * What a long outage takes down: the ad platform, the way to it, or the database. An outage of
 * any of them must not turn into a spent approval, however long it lasts.
 */
const LONG_OUTAGE_TARGETS: readonly Target[] = ['ads-sandbox', 'upstream-proxy', 'postgres'];

/** A short PostgreSQL kill keeps it down this long (ms) before it is started again. */
const SHORT_PG_OUTAGE = { min: 200, max: 2000 };

/** How long the killer waits for an apply request to be under way before it kills anyway. */
const WAIT_FOR_APPLIES_MS = 3000;

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** An error's message with its cause's (fetch puts the reason there). */
export function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as { cause?: unknown }).cause;
  return cause instanceof Error ? `${err.message}: ${cause.message}` : err.message;
}

/** A copy of `items` in a random order drawn from `random` (Fisher–Yates). */
export function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

export interface KillerOptions {
  stack: Stack;
  postgres: KillablePostgres;
  random: () => number;
  opts: {
    kills: number;
    killIntervalMs: { min: number; max: number };
    longOutages: number;
    longOutageMs: { min: number; max: number };
  };
  log: (line: string) => void;
  /** How many apply requests are waiting for their answer now. */
  inFlight: () => number;
  /** Whether every apply request has been answered: then the killer stops once it made its kills. */
  applyRequestsDone: () => boolean;
  /** A process was killed. */
  onKill: (target: Target) => void;
  /** A service was sent SIGKILL behind its supervisor's back: its exit is ours. */
  onSignalled: (service: ServiceName) => void;
  onLongOutage: (target: Target) => void;
}

/** Starts killing; `done` resolves once it stopped and every process it took down is up again. */
export function startKiller(k: KillerOptions): { done: Promise<void> } {
  const { stack, postgres, random, opts, log } = k;
  const between = (min: number, max: number) => min + Math.floor(random() * (max - min + 1));
  let pgRestart: Promise<void> | undefined;
  /** The process held down by a long outage, and its end. */
  let held: { target: Target; over: Promise<void> } | undefined;
  // Which kills are long outages: seeded, among the first half, so that apply requests keep
  // arriving while the process is down and after it is back.
  const longAt = new Set(
    shuffled(
      Array.from({ length: Math.max(opts.longOutages, Math.floor(opts.kills / 2)) }, (_, i) => i),
      random,
    ).slice(0, opts.longOutages),
  );
  // The first kills take every process once, in a seeded order, so that even a short run kills
  // each of them; the rest are drawn by weight.
  const firstRound = shuffled(
    TARGETS.map((t) => t.name),
    random,
  );
  const up = (name: Target) => name !== held?.target && (name !== 'postgres' || postgres.running());
  const draw = (): Target => {
    const first = firstRound.findIndex(up);
    if (first !== -1) return firstRound.splice(first, 1)[0] as Target;
    const candidates = TARGETS.filter((t) => up(t.name));
    let r = random() * candidates.reduce((sum, t) => sum + t.weight, 0);
    for (const t of candidates) {
      r -= t.weight;
      if (r < 0) return t.name;
    }
    return 'changes';
  };

  /** Kills the postmaster; once it is dead, `back` settles when it has been started again. */
  const killPostgres = async (outageMs: number): Promise<{ back: Promise<void> }> => {
    const waiting = k.inFlight();
    const pid = await postgres.kill();
    k.onKill('postgres');
    log(`kill -9 postgres (postmaster ${pid}), ${waiting} apply requests waiting; back in ${outageMs} ms`);
    const back = sleep(outageMs)
      .then(() => postgres.restart())
      .catch((err: unknown) => log(`! PostgreSQL did not start again: ${describe(err)}`));
    return { back };
  };

  /** A long outage: the process is killed and kept down (its supervisor told to leave it). */
  const holdDown = async (target: Target) => {
    const ms = between(opts.longOutageMs.min, opts.longOutageMs.max);
    log(`long outage: ${target} down for ${Math.round(ms / 1000)} s`);
    k.onLongOutage(target);
    let over: Promise<void>;
    if (target === 'postgres') {
      over = (await killPostgres(ms)).back;
    } else {
      k.onKill(target);
      await stack.kill(target, 'SIGKILL');
      over = sleep(ms)
        .then(() => stack.restart(target))
        .then(
          () => log(`long outage over: ${target} is back`),
          // Its exit is its supervisor's again: it is started again like any crashed process.
          (err: unknown) =>
            log(
              `long outage over: ${target} failed its first start (${describe(err).split('\n')[0]}); its supervisor takes over`,
            ),
        );
    }
    const current = { target, over };
    held = current;
    void over.then(() => {
      if (held === current) held = undefined;
    });
  };

  /** Kills one process of the stack; false when the one drawn was down already. */
  const killOne = async (n: number): Promise<boolean> => {
    if (longAt.has(n) && held === undefined) {
      const target = LONG_OUTAGE_TARGETS[Math.floor(random() * LONG_OUTAGE_TARGETS.length)] as Target;
      if (up(target)) {
        await holdDown(target);
        return true;
      }
    }
    const target = draw();
    if (target === 'postgres') {
      pgRestart = (await killPostgres(between(SHORT_PG_OUTAGE.min, SHORT_PG_OUTAGE.max))).back;
      return true;
    }
    const child = stack.process(target);
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) {
      log(`${target} is down already (restarting); no kill`);
      return false;
    }
    k.onSignalled(target);
    k.onKill(target);
    // kill -9 from outside, as an out-of-memory killer would: the supervisor sees a crash.
    process.kill(child.pid, 'SIGKILL');
    log(`kill -9 ${target} (pid ${child.pid}), ${k.inFlight()} apply requests waiting`);
    return true;
  };

  const done = (async () => {
    let made = 0;
    // At least `kills`; while apply requests are still waiting, up to twice as many: more would
    // keep a loaded machine's stack down for most of the run without reaching new states.
    while (made < opts.kills || (!k.applyRequestsDone() && made < 2 * opts.kills)) {
      await sleep(between(opts.killIntervalMs.min, opts.killIntervalMs.max));
      // A short PostgreSQL outage still under way is awaited: another kill would only lengthen it.
      await pgRestart;
      // Kills are meant to land while changes are being applied: wait a little for a request.
      const until = Date.now() + WAIT_FOR_APPLIES_MS;
      while (k.inFlight() === 0 && !k.applyRequestsDone() && Date.now() < until) await sleep(50);
      if (await killOne(made)) made++;
    }
    await pgRestart;
    await held?.over;
  })();
  return { done };
}
