/**
 * `npm test`: everything, in order — lint and format (Biome), typecheck, the protobuf checks
 * (buf lint, buf breaking, generated code up to date), then every unit, integration and
 * end-to-end test with node's test runner against one PostgreSQL for the whole run
 * (DATABASE_URL, or an embedded one started here). Each test file makes its own database.
 * The container suites (Docker: PostgreSQL in a container, the services' images) run last, in a
 * second test runner, once what they need, prepared from the start alongside, is ready.
 *
 * `npm test -- <text>…` runs only the test files whose path contains one of the texts, and
 * skips the static checks.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { type Bundles, ensureBundles } from '@adsmcp/testkit/bundles';
import { startEmbeddedPostgres } from '@adsmcp/testkit/embedded-postgres';
import { REPO_ROOT } from '@adsmcp/testkit/stack';
import {
  type ContainerNeeds,
  type ContainerPreparation,
  startContainerPreparation,
} from './test-containers.ts';

const BIN = join(REPO_ROOT, 'node_modules', '.bin');
const filters = process.argv.slice(2);

function step(title: string): void {
  process.stdout.write(`\n== ${title}\n`);
}

function sh(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): number {
  const r = spawnSync(cmd, args, { cwd: REPO_ROOT, stdio: 'inherit', env });
  return r.status ?? 1;
}

function git(args: string[]): { ok: boolean; out: string } {
  const r = spawnSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8' });
  return { ok: r.status === 0, out: r.stdout.trim() };
}

async function filesUnder(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  let entries: string[];
  try {
    entries = await readdir(dir, { recursive: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = join(dir, e);
    try {
      out.set(e, await readFile(p, 'utf8'));
    } catch {
      // a directory
    }
  }
  return out;
}

/** Generated code must be exactly what the protos generate now. */
async function generatedCodeIsCurrent(): Promise<boolean> {
  const tmp = await mkdtemp(join(tmpdir(), 'adsmcp-gen-'));
  try {
    if (sh(join(BIN, 'buf'), ['generate', '--output', tmp]) !== 0) return false;
    const fresh = await filesUnder(join(tmp, 'packages/proto/src/gen'));
    const committed = await filesUnder(join(REPO_ROOT, 'packages/proto/src/gen'));
    const differ = [...new Set([...fresh.keys(), ...committed.keys()])].filter(
      (f) => fresh.get(f) !== committed.get(f),
    );
    if (differ.length > 0) {
      process.stdout.write(`generated code is out of date (run npm run generate): ${differ.join(', ')}\n`);
      return false;
    }
    process.stdout.write('generated code matches the protos\n');
    return true;
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/** Breaking-change check against the last committed protos (or the commit before, when clean). */
function protosNotBroken(): boolean {
  const dirty = !git(['diff', '--quiet', 'HEAD', '--', 'proto', 'buf.yaml']).ok;
  const against = dirty ? 'HEAD' : 'HEAD~1';
  if (!git(['cat-file', '-e', `${against}:buf.yaml`]).ok) {
    process.stdout.write(`buf breaking: no earlier protos at ${against} to compare with; nothing to check\n`);
    return true;
  }
  return sh(join(BIN, 'buf'), ['breaking', '--against', `.git#ref=${against}`]) === 0;
}

/**
 * The suites that run containers need Docker and images built here from Debian's packages
 * (scripts/test-containers.ts prepares them while the other tests run, and they run after those);
 * ADSMCP_CONTAINER_TESTS=0 leaves them out of a whole run.
 */
const CONTAINER_SUITES = process.env.ADSMCP_CONTAINER_TESTS !== '0';

/** What a test file runs in containers: PostgreSQL (pg-container), the services' images (images), Kafka (kafka-container). */
async function containerNeeds(file: string): Promise<ContainerNeeds> {
  const text = await readFile(join(REPO_ROOT, file), 'utf8');
  return {
    pg: text.includes('@adsmcp/testkit/pg-container'),
    images: text.includes('@adsmcp/testkit/images'),
    kafka: text.includes('@adsmcp/testkit/kafka-container'),
  };
}

async function usesContainers(file: string): Promise<boolean> {
  const needs = await containerNeeds(file);
  return needs.pg || needs.images || needs.kafka;
}

/**
 * The longest files, started first: the runner takes files in order, two at a time, and a run
 * whose last file is one of these ends with it alone for a minute or more. Measured in CI on
 * 2026-11-24 at 90, 71 and 50 s, where most files take under 30; on the slower 2026-11-30 at 67 to
 * 150 s (`scripts/test-file-times.mjs` prints the longest after each run). Other files as long, the
 * dashboard's for one, start soon after them with the other end-to-end files (each starts a whole
 * stack); then come the services' files, and last the packages' unit files, which take a second
 * or two each and so fill the run's end evenly.
 */
const LONGEST_FIRST = [
  'test/chaos/chaos.test.ts',
  'test/e2e/replicas.test.ts',
  'test/e2e/robustness.test.ts',
  'test/e2e/npm-start.test.ts',
  // A Kafka broker restarted under 200 applies, and a three-broker cluster losing one: 60 to 80 s.
  'test/e2e/kafka-faults.test.ts',
  'test/kafka/cluster-broker-loss.test.ts',
];

const runOrder = (a: string, b: string): number => {
  const rank = (f: string) => {
    const path = f.split(sep).join('/');
    const i = LONGEST_FIRST.indexOf(path);
    if (i !== -1) return i;
    const group = ['test/', 'services/'].findIndex((root) => path.startsWith(root));
    return LONGEST_FIRST.length + (group === -1 ? 2 : group);
  };
  return rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0);
};

async function testFiles(): Promise<string[]> {
  const roots = ['packages', 'services', 'test', 'deploy'];
  const files: string[] = [];
  for (const root of roots) {
    let entries: string[] = [];
    try {
      entries = await readdir(join(REPO_ROOT, root), { recursive: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      const p = join(root, e);
      if (p.includes('node_modules') || !p.endsWith('.test.ts')) continue;
      if (filters.length > 0 && !filters.some((f) => p.includes(f))) continue;
      if (filters.length === 0 && !CONTAINER_SUITES && (await usesContainers(p))) continue;
      files.push(p);
    }
  }
  return files.sort(runOrder);
}

/**
 * What some tests drive comes from Debian: Chromium for the browser tests, and Maven (with a JRE)
 * for the Kafka tests, which fetch Apache Kafka's jars with it and run the broker on that JVM. On
 * a machine without one, install it when we can (root with apt-get, as on a fresh CI machine) and
 * say so; otherwise the tests that need it explain.
 */
function ensureDebianPackage(pkg: string, binary: string, purpose: string, override?: string): void {
  if (override || existsSync(binary)) return;
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!root || !existsSync('/usr/bin/apt-get')) {
    process.stdout.write(`${pkg} is not installed: ${purpose} will fail (apt-get install -y ${pkg})\n`);
    return;
  }
  step(`installing ${pkg} for ${purpose} (apt-get install -y ${pkg})`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  if (
    sh('apt-get', ['update', '-qq'], env) !== 0 ||
    sh('apt-get', ['install', '-y', '-qq', pkg], env) !== 0
  ) {
    process.stdout.write(`could not install ${pkg}; ${purpose} will fail\n`);
  }
}

function reportBundles(bundles: Bundles | Error): void {
  step('service bundles (esbuild)');
  if (bundles instanceof Error) {
    // The tests that start a stack report it again; the others may still run.
    process.stdout.write(`could not bundle the services: ${bundles.message}\n`);
    return;
  }
  const where = relative(REPO_ROOT, bundles.dir);
  process.stdout.write(
    bundles.built ? `built ${where} in ${(bundles.ms / 1000).toFixed(1)} s\n` : `${where} is current\n`,
  );
}

/**
 * node's test runner on `files`, two at a time, against the run's PostgreSQL (`env`). Run without
 * blocking this process: the embedded PostgreSQL writes its log to a pipe that this process
 * drains, and a server whose log pipe fills up stops at its next log line (a checkpoint's, say,
 * in the middle of a DROP DATABASE), which would hang every test waiting on it.
 */
function runTests(files: string[], env: NodeJS.ProcessEnv): Promise<number> {
  process.stdout.write(`${files.map((f) => `  ${relative('.', f)}`).join('\n')}\n`);
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--test',
      '--test-concurrency=2',
      '--test-timeout=300000',
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      // Once the run ends: its longest files, with their times.
      `--test-reporter=${join(REPO_ROOT, 'scripts', 'test-file-times.mjs')}`,
      '--test-reporter-destination=stdout',
      ...files,
    ],
    { cwd: REPO_ROOT, stdio: 'inherit', env },
  );
  return new Promise((resolve) => {
    child.once('error', () => resolve(1));
    child.once('exit', (code) => resolve(code ?? 1));
  });
}

interface Selected {
  plain: string[];
  /** The files that run containers, run after the others once Docker and the images are ready. */
  containers: string[];
}

async function selectFiles(): Promise<Selected> {
  const selected: Selected = { plain: [], containers: [] };
  for (const f of await testFiles())
    ((await usesContainers(f)) ? selected.containers : selected.plain).push(f);
  return selected;
}

async function checksAndTests(
  files: Selected,
  containers: ContainerPreparation | undefined,
  kafkaJars: Promise<boolean> | undefined,
): Promise<number> {
  ensureDebianPackage('chromium', '/usr/bin/chromium', 'the browser tests', process.env.CHROMIUM_PATH);
  if (filters.length === 0) {
    step('lint and format (biome)');
    if (sh(join(BIN, 'biome'), ['ci', '.']) !== 0) return 1;
    step('typecheck (tsc)');
    if (sh(join(BIN, 'tsc'), ['-p', '.']) !== 0) return 1;
    step('protobuf (buf lint, buf breaking, generated code)');
    if (sh(join(BIN, 'buf'), ['lint']) !== 0) return 1;
    if (!protosNotBroken()) return 1;
    if (!(await generatedCodeIsCurrent())) return 1;
  }

  if (files.plain.length + files.containers.length === 0) {
    process.stdout.write(`no test files match ${filters.join(', ')}\n`);
    return 1;
  }
  // The services' bundles, built once here while PostgreSQL starts, so that every test file's
  // stack finds them current instead of building them itself.
  const bundling = ensureBundles().catch((err: unknown) =>
    err instanceof Error ? err : new Error(String(err)),
  );
  let stopPostgres: (() => Promise<void>) | undefined;
  const env = { ...process.env };
  if (!env.DATABASE_URL) {
    step('PostgreSQL (embedded-postgres)');
    const dataDir = await mkdtemp(join(tmpdir(), 'adsmcp-test-pg-'));
    const pg = await startEmbeddedPostgres({ dataDir, persistent: false, fsync: false });
    env.DATABASE_URL = pg.adminUrl;
    stopPostgres = async () => {
      await pg.stop();
      await rm(dataDir, { recursive: true, force: true });
    };
    process.stdout.write(`started on port ${pg.port}\n`);
  } else {
    step('PostgreSQL (DATABASE_URL)');
  }
  reportBundles(await bundling);
  try {
    let code = 0;
    if (kafkaJars !== undefined) {
      step('Kafka broker jars (Maven, test/kafka/pom.xml)');
      // Fetched while the checks ran; a failure is reported by the Kafka tests too, with the reason.
      if (!(await kafkaJars))
        process.stdout.write('\n!! the Kafka broker could not be fetched: the Kafka tests will fail\n');
    }
    if (files.plain.length > 0) {
      step(`tests (${files.plain.length} files)`);
      code = await runTests(files.plain, env);
    }
    if (containers) {
      step(`container tests (${files.containers.length} files): waiting for Docker and the images`);
      const prepared = await containers.ready;
      if (!prepared.ok) {
        process.stdout.write(
          `\n!! Docker cannot run here, so the container suites cannot: ${prepared.error}\n`,
        );
        return 1;
      }
      code = (await runTests(files.containers, env)) || code;
    }
    return code;
  } finally {
    await stopPostgres?.();
  }
}

/** A test file that starts Apache Kafka (testkit/kafka-broker.ts, or its image: kafka-container.ts) needs its jars. */
async function usesKafka(file: string): Promise<boolean> {
  return /@adsmcp\/testkit\/kafka-(broker|container)/.test(await readFile(join(REPO_ROOT, file), 'utf8'));
}

/**
 * The Kafka broker's jars, fetched by Maven into their cache (packages/testkit/src/kafka-jars.ts)
 * in a process of its own from the start of the run, while the static checks run; it prints how
 * long that took, or that they were cached. Resolves with whether it succeeded.
 */
function startKafkaJarsFetch(): Promise<boolean> {
  ensureDebianPackage('maven', '/usr/bin/mvn', 'the Kafka tests', process.env.MVN_PATH);
  const script = join(REPO_ROOT, 'packages', 'testkit', 'src', 'kafka-jars.ts');
  const child = spawn(process.execPath, ['--import', 'tsx', script], { cwd: REPO_ROOT, stdio: 'inherit' });
  return new Promise((resolve) => {
    child.once('error', () => resolve(false));
    child.once('exit', (code) => resolve(code === 0));
  });
}

/**
 * Docker and the images for the container suites (scripts/test-containers.ts) are prepared from
 * the start, in a process of their own, while the static checks and the other tests run; what was
 * started for them is stopped at the end.
 */
async function main(): Promise<number> {
  const files = await selectFiles();
  const needs = { pg: false, images: false, kafka: false };
  for (const f of files.containers) {
    const n = await containerNeeds(f);
    needs.pg ||= n.pg;
    needs.images ||= n.images;
    needs.kafka ||= n.kafka;
  }
  const containers = files.containers.length > 0 ? startContainerPreparation(needs, REPO_ROOT) : undefined;
  let kafka = false;
  for (const f of [...files.plain, ...files.containers]) kafka ||= await usesKafka(f);
  const kafkaJars = kafka ? startKafkaJarsFetch() : undefined;
  try {
    return await checksAndTests(files, containers, kafkaJars);
  } finally {
    await containers?.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(
      `npm test failed to run: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
