/**
 * How long a supervisor waits before restarting a process that exited unexpectedly: a short
 * first wait that doubles on each crash up to a ceiling, and starts short again once the process
 * has stayed up a while (a crash loop backs off; a rare crash is repaired at once).
 */

export interface RestartPolicy {
  /** The wait before the first restart. */
  initialDelayMs: number;
  /** The longest wait. */
  maxDelayMs: number;
  /** A process that ran at least this long before exiting is restarted after `initialDelayMs` again. */
  resetAfterMs: number;
}

/** 0.5 s doubling to 30 s; reset after a minute of running. */
export const DEFAULT_RESTART_POLICY: RestartPolicy = {
  initialDelayMs: 500,
  maxDelayMs: 30_000,
  resetAfterMs: 60_000,
};

/**
 * The wait before the next restart. `previousDelayMs` is the wait before the run that just
 * ended (undefined when the process had never been restarted); `ranForMs` is how long that run
 * lasted.
 */
export function restartDelay(
  policy: RestartPolicy,
  previousDelayMs: number | undefined,
  ranForMs: number,
): number {
  if (previousDelayMs === undefined || ranForMs >= policy.resetAfterMs) return policy.initialDelayMs;
  return Math.min(policy.maxDelayMs, previousDelayMs * 2);
}

/** "0.5 s", "30 s": a wait as people read it. */
export function formatDelay(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}
