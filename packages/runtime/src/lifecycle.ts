/** Process lifecycle for a service's main.ts: fail fast on start-up errors, drain on SIGTERM. */
import { ConfigError } from './config.ts';
import type { Logger } from './log.ts';

/** runMain runs `main`; a start-up failure prints its reason and exits 1. */
export function runMain(service: string, main: () => Promise<void>): void {
  exitWithParent();
  main().catch((err: unknown) => {
    const reason =
      err instanceof ConfigError
        ? err.message
        : err instanceof Error
          ? (err.stack ?? err.message)
          : String(err);
    process.stderr.write(`${service}: failed to start: ${reason}\n`);
    process.exit(1);
  });
}

/**
 * exitWithParent stops this process (a SIGTERM to itself, so onShutdown drains it) when the
 * process that started it with an IPC channel dies, however it died. A supervisor killed with
 * SIGKILL runs no code of its own, so its children must notice for themselves; the end of the
 * channel is that notice, at once and without polling. A process started without a channel (a
 * container, a test's in-process service) is unaffected, and the channel keeps nothing alive.
 */
export function exitWithParent(): void {
  if (typeof process.send !== 'function') return;
  const parentGone = () => {
    // stdout and stderr were pipes to the parent, broken now. At exit pino flushes the log with
    // sonic-boom's flushSync, which retries a broken pipe forever: once the drain is done, the
    // process ends before that exit handler runs (nobody is left to read its exit code).
    process.prependListener('exit', () => process.kill(process.pid, 'SIGKILL'));
    process.kill(process.pid, 'SIGTERM');
  };
  process.channel?.unref();
  if (process.connected) process.once('disconnect', parentGone);
  else parentGone();
}

/**
 * onShutdown runs `stop` once on SIGTERM or SIGINT and then exits. A terminal's Ctrl-C reaches a
 * service twice under `npm start` (from the terminal and from the orchestrator), so a repeated
 * signal does not cut the drain short; a stop that takes longer than `timeoutMs` exits at once.
 */
export function onShutdown(logger: Logger, stop: () => Promise<void>, timeoutMs = 20_000): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.info({ signal }, 'already stopping');
      return;
    }
    stopping = true;
    logger.info({ signal }, 'stopping');
    const timer = setTimeout(() => {
      logger.error('stop timed out');
      process.exit(1);
    }, timeoutMs);
    timer.unref();
    stop().then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ err }, 'stop failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}

/**
 * announceListening prints the one line that says a process is ready and where, whatever the
 * log level: `{"level":"info","service":…,"msg":"listening","port":…}`. Orchestrators
 * (npm start, the tests) wait for it.
 */
export function announceListening(service: string, port: number, extra: Record<string, unknown> = {}): void {
  process.stdout.write(
    `${JSON.stringify({ level: 'info', time: new Date().toISOString(), service, ...extra, port, msg: 'listening' })}\n`,
  );
}

/**
 * repeatEvery runs `work` now and then `everyMs` after each run ends, until the returned function
 * is called, which stops it and resolves once a run under way has finished (so that a pool it uses
 * can be ended right after). Runs never overlap, and the timer does not keep the process alive.
 * `work` reports its own failures (a service's periodic jobs log them and try again next time).
 */
export function repeatEvery(everyMs: number, work: () => Promise<void>): () => Promise<void> {
  if (!(everyMs > 0)) throw new RangeError(`a repeat interval must be positive, got ${everyMs}`);
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  const schedule = (delayMs: number): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      timer = undefined;
      running = work().finally(() => {
        running = undefined;
        schedule(everyMs);
      });
    }, delayMs);
    timer.unref();
  };
  schedule(0);
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await running;
  };
}
