/**
 * What the container test suites need, prepared by `npm test` when it runs one of them: Debian's
 * docker.io and debootstrap (apt-get, when missing), a Docker engine (dockerd started here when
 * none answers), and the local PostgreSQL image (built from Debian's packages when missing; see
 * packages/testkit/src/pg-container.ts). What was started here is stopped by `stop`.
 *
 * When Docker cannot run here (not root, no engine, no kernel support), this says so and the run
 * fails: the container suites are never skipped in silence.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureLocalPgImage, LOCAL_PG_IMAGE, pgImage } from '@adsmcp/testkit/pg-container';

export interface PreparedContainers {
  stop(): Promise<void>;
}

const SOCKET = '/var/run/docker.sock';

/** Prefixed: these lines come while the static checks print theirs. */
function say(line: string): void {
  process.stdout.write(`[containers] ${line}\n`);
}

/** Whether the engine answers its ping on the local socket. */
function engineAnswers(): Promise<boolean> {
  if (process.env.DOCKER_HOST && !process.env.DOCKER_HOST.startsWith('unix://')) {
    return Promise.resolve(true); // a remote engine: Testcontainers will say if it does not answer
  }
  const socketPath = process.env.DOCKER_HOST?.slice('unix://'.length) || SOCKET;
  if (!existsSync(socketPath)) return Promise.resolve(false);
  return new Promise((resolve) => {
    const req = request({ socketPath, path: '/_ping', timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

/** Runs apt-get without blocking the event loop; true when it succeeded. */
function aptGet(args: string[]): Promise<boolean> {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  return new Promise((resolve) => {
    const child = spawn('apt-get', args, { stdio: ['ignore', 'ignore', 'inherit'], env });
    child.once('error', () => resolve(false));
    child.once('exit', (code) => resolve(code === 0));
  });
}

/** Installs what is missing of docker.io and debootstrap, in one apt-get run. */
async function installDebianTools(): Promise<void> {
  const missing = [
    ['docker.io', '/usr/sbin/dockerd'],
    ['debootstrap', '/usr/sbin/debootstrap'],
  ].filter(([, bin]) => !existsSync(bin as string));
  if (missing.length === 0) return;
  const pkgs = missing.map(([pkg]) => pkg as string);
  if (!isRoot() || !existsSync('/usr/bin/apt-get')) {
    throw new Error(`${pkgs.join(' and ')} not installed and this is not root with apt-get`);
  }
  say(`apt-get install -y ${pkgs.join(' ')}`);
  if (!(await aptGet(['update', '-qq'])) || !(await aptGet(['install', '-y', '-qq', ...pkgs]))) {
    throw new Error(`apt-get could not install ${pkgs.join(' ')}`);
  }
}

/** Starts dockerd and waits for its socket; the engine's log goes to a file named on failure. */
async function startEngine(): Promise<ChildProcess> {
  if (!isRoot()) throw new Error('no Docker engine answers, and dockerd needs root to start one');
  const logFile = join(tmpdir(), `adsmcp-dockerd-${process.pid}.log`);
  const out = openSync(logFile, 'a');
  const dockerd = spawn('dockerd', [], { stdio: ['ignore', out, out], detached: false });
  const exited = new Promise<string>((resolve) =>
    dockerd.once('exit', (code, signal) => resolve(`dockerd exited (${code ?? signal})`)),
  );
  const deadline = Date.now() + 60_000;
  while (!(await engineAnswers())) {
    const gone = await Promise.race([exited, sleep(250).then(() => undefined)]);
    if (gone !== undefined || Date.now() > deadline) {
      dockerd.kill('SIGTERM');
      const tail = (await readFile(logFile, 'utf8').catch(() => '')).split('\n').slice(-15).join('\n');
      throw new Error(`${gone ?? 'dockerd did not answer within 60 s'}; its log (${logFile}):\n${tail}`);
    }
  }
  say(`dockerd started (pid ${dockerd.pid}, log ${logFile})`);
  return dockerd;
}

async function stopEngine(dockerd: ChildProcess): Promise<void> {
  if (dockerd.exitCode !== null || dockerd.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => dockerd.once('exit', () => resolve()));
  dockerd.kill('SIGTERM');
  const timeout = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 30_000).unref());
  if ((await Promise.race([exited, timeout])) === 'timeout') {
    dockerd.kill('SIGKILL');
    await exited;
  }
  say('dockerd stopped');
}

/**
 * Prepares Docker and the image for the container suites. Throws, saying why, when it cannot.
 */
export async function prepareContainers(): Promise<PreparedContainers> {
  const started = Date.now();
  let dockerd: ChildProcess | undefined;
  try {
    if (!(await engineAnswers())) {
      await installDebianTools();
      dockerd = await startEngine();
    } else {
      say('a Docker engine answers');
    }
    if (pgImage() === LOCAL_PG_IMAGE) {
      await installDebianTools();
      const built = await ensureLocalPgImage(say);
      say(built ? `built ${LOCAL_PG_IMAGE}` : `${LOCAL_PG_IMAGE} is built already`);
    } else {
      say(`PostgreSQL image from ADSMCP_PG_IMAGE: ${pgImage()} (pulled by Testcontainers when missing)`);
    }
  } catch (err) {
    if (dockerd) await stopEngine(dockerd);
    throw err;
  }
  say(`containers prepared in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return {
    async stop() {
      if (dockerd) await stopEngine(dockerd);
    },
  };
}

/** What preparing came to: never a rejection, so it can run unawaited beside the static checks. */
export type Preparation = { ok: true; prepared: PreparedContainers } | { ok: false; error: string };

/**
 * Starts preparing when one of `files` (repo-relative) uses the testkit's pg-container, else
 * resolves to undefined. `npm test` awaits it before the tests and stops what it started.
 */
export async function prepareContainersFor(files: string[], root: string): Promise<Preparation | undefined> {
  let needed = false;
  for (const f of files) {
    if ((await readFile(join(root, f), 'utf8')).includes('@adsmcp/testkit/pg-container')) needed = true;
  }
  if (!needed) return undefined;
  try {
    return { ok: true, prepared: await prepareContainers() };
  } catch (err) {
    return { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
}
