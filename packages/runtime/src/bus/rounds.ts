/**
 * Rounds of work that wake-ups coalesce into: the bus relay and the Postgres consumer both look for
 * due messages when notified, on a timer and after a failure. A wake-up while a round runs does not
 * start a second round beside it; it asks for one more round right after, so a message that became
 * due during a round is never missed and never looked for twice at once.
 */
export interface Rounds {
  /** Runs a round now, or once more right after the round already under way. */
  wake(): void;
  /** Settles when no round is under way (for shutdown, after the caller stopped waking). */
  settled(): Promise<void>;
}

/**
 * rounds runs `round` on each wake-up while `active()` holds. An error ends the run and goes to
 * `onError` (the caller decides when to wake again); the next wake-up starts afresh.
 */
export function rounds(
  round: () => Promise<void>,
  active: () => boolean,
  onError: (err: unknown) => void,
): Rounds {
  let current: Promise<void> | undefined;
  let again = false;
  const run = async () => {
    try {
      do {
        again = false;
        await round();
      } while (again && active());
    } catch (err) {
      onError(err);
    } finally {
      // Cleared here, in the same step that saw no more rounds asked for: a wake-up from another
      // callback queued before a `.finally()` on this promise would otherwise land in between,
      // ask for a round no one runs, and wait for the next poll.
      current = undefined;
    }
  };
  return {
    wake() {
      if (!active()) return;
      if (current !== undefined) {
        again = true;
        return;
      }
      // run() always awaits a round before its finally, so this assignment comes first.
      current = run();
    },
    settled: () => current ?? Promise.resolve(),
  };
}
