/**
 * What the container test suites need, prepared by `npm test` while the other tests run: Debian's
 * docker.io and debootstrap (apt-get, when missing), a Docker engine (dockerd started here when
 * none answers), and the images built on this machine when missing: the PostgreSQL image
 * (packages/testkit/src/pg-container.ts), the Node base image and the services' images
 * (packages/testkit/src/images.ts). What was started here is stopped at the end.
 *
 * The preparation runs in a child process of its own (this file, run as a script), so that it
 * advances while `npm test` waits on the static checks and the other tests in synchronous calls.
 * It tells its parent over the IPC channel when it is ready or why it failed, and stops dockerd
 * when told to or when its parent goes away.
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
import { fileURLToPath } from 'node:url';
import { ensureNodeBaseImage, ensureServiceImages, NODE_BASE_IMAGE } from '@adsmcp/testkit/images';
import { ensureLocalKafkaImage, localKafkaImage } from '@adsmcp/testkit/kafka-container';
import { ensureLocalPgImage, LOCAL_PG_IMAGE, pgImage } from '@adsmcp/testkit/pg-container';

/** What the selected container suites use: PostgreSQL in a container, the services' images, Kafka. */
export interface ContainerNeeds {
  pg: boolean;
  images: boolean;
  kafka: boolean;
}

const SOCKET = '/var/run/docker.sock';

/** Prefixed: these lines come while the other tests print theirs. */
function say(line: string): void {
  process.stdout.write(`[containers] ${line}\n`);
}

const seconds = (since: number) => `${((Date.now() - since) / 1000).toFixed(1)} s`;

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

/** Runs apt-get once without blocking the event loop; true when it succeeded. */
function aptGetOnce(args: string[]): Promise<boolean> {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  return new Promise((resolve) => {
    const child = spawn('apt-get', ['-o', 'DPkg::Lock::Timeout=300', ...args], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env,
    });
    child.once('error', () => resolve(false));
    child.once('exit', (code) => resolve(code === 0));
  });
}

/**
 * apt-get, tried again a few times: `npm test` installs Chromium and Maven with apt-get at the same
 * time on a new machine, and whichever comes second finds apt's locks taken.
 */
async function aptGet(args: string[]): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    if (await aptGetOnce(args)) return true;
    if (attempt === 6) return false;
    say(`apt-get ${args.join(' ')} failed; trying again in 20 s (another apt-get may hold its lock)`);
    await sleep(20_000);
  }
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
  const started = Date.now();
  say(`apt-get install -y ${pkgs.join(' ')}`);
  if (!(await aptGet(['update', '-qq'])) || !(await aptGet(['install', '-y', '-qq', ...pkgs]))) {
    throw new Error(`apt-get could not install ${pkgs.join(' ')}`);
  }
  say(`installed ${pkgs.join(' ')} in ${seconds(started)}`);
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

/** The Node base image; resolves when it is there. */
async function buildNodeBase(): Promise<void> {
  const started = Date.now();
  const built = await ensureNodeBaseImage(say);
  say(built ? `built ${NODE_BASE_IMAGE} in ${seconds(started)}` : `${NODE_BASE_IMAGE} is built already`);
}

/** The services' images on the Node base. */
async function buildServiceImages(): Promise<void> {
  const started = Date.now();
  const images = await ensureServiceImages(say);
  say(`service images ready in ${seconds(started)}: ${Object.values(images).join(' ')}`);
}

async function buildPgImage(): Promise<void> {
  if (pgImage() !== LOCAL_PG_IMAGE) {
    say(`PostgreSQL image from ADSMCP_PG_IMAGE: ${pgImage()} (pulled by Testcontainers when missing)`);
    return;
  }
  const started = Date.now();
  const built = await ensureLocalPgImage(say);
  say(built ? `built ${LOCAL_PG_IMAGE} in ${seconds(started)}` : `${LOCAL_PG_IMAGE} is built already`);
}

async function buildKafkaImage(): Promise<void> {
  const started = Date.now();
  const built = await ensureLocalKafkaImage(say);
  const image = await localKafkaImage();
  say(built ? `built ${image} in ${seconds(started)}` : `${image} is built already`);
}

/** The engine started here, stopped at the end. */
let engine: ChildProcess | undefined;

/** Prepares Docker and the images `needs` names. Throws, saying why, when it cannot. */
async function prepare(needs: ContainerNeeds): Promise<void> {
  const started = Date.now();
  try {
    if (!(await engineAnswers())) {
      await installDebianTools();
      engine = await startEngine();
    } else {
      say('a Docker engine answers');
    }
    await installDebianTools();
    // The Node base's debootstrap first, alone: the PostgreSQL one then finds every package they
    // share in the shared download cache, while the service images are built on the new base.
    const base = needs.images ? buildNodeBase() : Promise.resolve();
    const images = needs.images ? base.then(buildServiceImages) : Promise.resolve();
    const pg = needs.pg ? base.catch(() => undefined).then(buildPgImage) : Promise.resolve();
    // After PostgreSQL's: one debootstrap at a time fills the shared download cache.
    const kafka = needs.kafka ? pg.catch(() => undefined).then(buildKafkaImage) : Promise.resolve();
    for (const r of await Promise.allSettled([images, pg, kafka]))
      if (r.status === 'rejected') throw r.reason;
  } catch (err) {
    if (engine) await stopEngine(engine);
    engine = undefined;
    throw err;
  }
  say(`containers prepared in ${seconds(started)}`);
}

// ---------------------------------------------------------------------------------------------
// The parent's side.

/** What preparing came to: never a rejection. */
export type Preparation = { ok: true } | { ok: false; error: string };

type Message = Preparation;

export interface ContainerPreparation {
  /** Resolves when Docker and the images are ready, or with why they cannot be. */
  ready: Promise<Preparation>;
  /** Stops what the preparation started (dockerd), and the preparation itself if still running. */
  stop(): Promise<void>;
}

/** Starts preparing what `needs` names in a child process (this file as a script). */
export function startContainerPreparation(needs: ContainerNeeds, root: string): ContainerPreparation {
  const args = [
    ...(needs.pg ? ['--pg'] : []),
    ...(needs.images ? ['--images'] : []),
    ...(needs.kafka ? ['--kafka'] : []),
  ];
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), ...args], {
    cwd: root,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ready = new Promise<Preparation>((resolve) => {
    child.once('message', (m: Message) => resolve(m));
    void exited.then((code) => resolve({ ok: false, error: `the preparation exited (code ${code})` }));
  });
  return {
    ready,
    async stop() {
      if (child.connected) child.send('stop');
      else child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The child's side.

async function child(): Promise<void> {
  const needs = {
    pg: process.argv.includes('--pg'),
    images: process.argv.includes('--images'),
    kafka: process.argv.includes('--kafka'),
  };
  const send = (m: Message) => process.send?.(m);
  // Told to stop, or the parent went away, even before the preparation is done: stop the engine
  // started here (a build still running ends by itself), then exit.
  const stop = async () => {
    if (engine) await stopEngine(engine);
    process.exit(0);
  };
  process.once('message', () => void stop());
  process.once('disconnect', () => void stop());
  try {
    await prepare(needs);
    send({ ok: true });
  } catch (err) {
    send({ ok: false, error: err instanceof Error ? err.message : String(err) });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) void child();
