/**
 * The embedded PostgreSQL of a chaos run, which the run kills with SIGKILL (its postmaster, as an
 * out-of-memory killer or an operator's `kill -9` would) and starts again on the same data
 * directory and port, so that every service's configured DATABASE_URL reaches it unchanged.
 */
import { rm } from 'node:fs/promises';
import { type RunningPostgres, startEmbeddedPostgres } from '@adsmcp/testkit/embedded-postgres';

export interface KillablePostgres {
  /** URL of the `postgres` maintenance database, as a superuser. */
  adminUrl: string;
  port: number;
  /** Whether the postmaster is up (started and not killed since). */
  running(): boolean;
  /** Sends SIGKILL to the postmaster and resolves with its pid once it has exited. */
  kill(): Promise<number>;
  /** Starts it again on the same data and port; resolves once it accepts connections. */
  restart(): Promise<void>;
  /** Stops it for good and removes its data. */
  stop(): Promise<void>;
  /** Its last log lines, for a report. */
  recentLog(): string[];
}

const KEEP_LINES = 200;
/** How long a restart keeps trying while the killed server's backends still hold its shared memory. */
const RESTART_WITHIN_MS = 60_000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function startKillablePostgres(dataDir: string): Promise<KillablePostgres> {
  const log: string[] = [];
  const onLog = (line: string) => {
    for (const l of line.split('\n')) {
      if (l.trim() === '') continue;
      log.push(l);
      if (log.length > KEEP_LINES) log.shift();
    }
  };
  // fsync stays off as in test runs: a killed process loses nothing that was written, since the
  // written pages are in the kernel's cache; only a machine crash would need them on disk. Each
  // server is persistent, so that stopping the instance of a killed one leaves the data; the data
  // is removed once at the end.
  const start = (port?: number) =>
    startEmbeddedPostgres({ dataDir, persistent: true, fsync: false, onLog, ...(port ? { port } : {}) });
  let current: RunningPostgres | undefined = await start();
  const { port, adminUrl } = current;
  const actualDir = current.dataDir;

  return {
    adminUrl,
    port,
    running: () => current !== undefined,
    async kill() {
      const killed = current;
      if (killed === undefined) throw new Error('PostgreSQL is not running');
      current = undefined;
      const pid = killed.pid;
      process.kill(pid, 'SIGKILL');
      while (alive(pid)) await sleep(20);
      // The instance of a dead server only lets go of what it holds (its exit hook).
      await killed.stop();
      return pid;
    },
    async restart() {
      const deadline = Date.now() + RESTART_WITHIN_MS;
      for (;;) {
        try {
          current = await start(port);
          return;
        } catch (err) {
          // The killed postmaster's backends leave when they notice it is gone; until then the
          // new one refuses to start ("pre-existing shared memory block is still in use").
          if (Date.now() > deadline)
            throw new Error(
              `PostgreSQL did not start again within ${RESTART_WITHIN_MS / 1000} s (${String(err)}):\n${log.slice(-10).join('\n')}`,
            );
          await sleep(250);
        }
      }
    },
    async stop() {
      const running = current;
      current = undefined;
      await running?.stop();
      await rm(actualDir, { recursive: true, force: true });
    },
    recentLog: () => [...log],
  };
}
