/**
 * The bundles a stack runs from, built from a small workspace of the same shape as ours: a
 * service that imports a workspace package, reads its migrations, starts a worker thread by path,
 * and uses a package of which the workspace package needs another version than the root has.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { type Bundles, bundledEntry, ensureBundles } from '../src/bundles.ts';

const run = promisify(execFile);
let root: string;

async function put(file: string, text: string): Promise<void> {
  await mkdir(dirname(join(root, file)), { recursive: true });
  await writeFile(join(root, file), text);
}

/** A package `dep` at `dir` whose only export is its version. */
async function dep(dir: string, version: string): Promise<void> {
  await put(
    `${dir}/package.json`,
    JSON.stringify({ name: 'dep', version, type: 'module', exports: './index.js' }),
  );
  await put(`${dir}/index.js`, `export const version = '${version}';\n`);
}

const MAIN = `import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { version } from 'dep';
import { greeting } from '@adsmcp/lib/greeting';

if (process.argv[2] === 'fail') throw new Error('failed on purpose');
const migrations = readdirSync(fileURLToPath(new URL('../migrations', import.meta.url)));
const worker = new Worker(new URL('./hello-worker.js', import.meta.url));
worker.once('message', (m: string) => {
  console.log(JSON.stringify({ greeting: greeting(), service: version, migrations, worker: m }));
});
`;

async function workspace(): Promise<void> {
  root = await mkdtemp(join(tmpdir(), 'adsmcp-bundles-'));
  await put(
    'package.json',
    JSON.stringify({ name: 'w', type: 'module', workspaces: ['packages/*', 'services/*'] }),
  );
  await put('package-lock.json', '{}\n');
  await put('tsconfig.json', '{}\n');
  await dep('node_modules/dep', '1.0.0');
  await dep('packages/lib/node_modules/dep', '2.0.0');
  await put(
    'packages/lib/package.json',
    JSON.stringify({ name: '@adsmcp/lib', type: 'module', exports: { './*': './src/*.ts' } }),
  );
  await put(
    'packages/lib/src/greeting.ts',
    "import { version } from 'dep';\nexport const greeting = (): string => 'hello, dep ' + version;\n",
  );
  await mkdir(join(root, 'node_modules/@adsmcp'), { recursive: true });
  await symlink('../../packages/lib', join(root, 'node_modules/@adsmcp/lib'));
  await put('services/hello/package.json', JSON.stringify({ name: '@adsmcp/hello', type: 'module' }));
  await put('services/hello/src/main.ts', MAIN);
  await put(
    'services/hello/src/hello-worker.ts',
    "import { parentPort } from 'node:worker_threads';\nparentPort?.postMessage('worker ran');\n",
  );
  await put('services/hello/migrations/0001_init.sql', 'SELECT 1;\n');
}

async function runMain(b: Bundles, ...args: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await run(process.execPath, ['--enable-source-maps', bundledEntry(b, 'hello'), ...args]);
  return JSON.parse(stdout) as Record<string, unknown>;
}

before(workspace);
after(async () => {
  await rm(root, { recursive: true, force: true });
});

test('a bundled service runs as from source: its migrations, its worker, each package at the version its importer gets', async () => {
  const b = await ensureBundles(root);
  assert.deepEqual(await runMain(b), {
    greeting: 'hello, dep 2.0.0',
    service: '1.0.0',
    migrations: ['0001_init.sql'],
    worker: 'worker ran',
  });
});

test("a bundle's stack trace points at the TypeScript source line", async () => {
  const b = await ensureBundles(root);
  const failed = await run(process.execPath, ['--enable-source-maps', bundledEntry(b, 'hello'), 'fail']).then(
    () => assert.fail('the process should have failed'),
    (err: { stderr: string }) => err.stderr,
  );
  assert.match(failed, /failed on purpose/);
  assert.match(failed, /services\/hello\/src\/main\.ts:7/);
});

test('bundles are reused while the sources are unchanged and rebuilt after an edit, older ones kept', async () => {
  const first = await ensureBundles(root);
  const again = await ensureBundles(root);
  assert.equal(again.dir, first.dir);
  assert.equal(again.built, false);

  await put(
    'packages/lib/src/greeting.ts',
    "import { version } from 'dep';\nexport const greeting = (): string => 'hi, dep ' + version;\n",
  );
  const edited = await ensureBundles(root);
  assert.notEqual(edited.dir, first.dir);
  assert.equal(edited.built, true);
  assert.equal((await runMain(edited)).greeting, 'hi, dep 2.0.0');
  // A stack started before the edit still finds its files.
  assert.equal((await runMain(first)).greeting, 'hello, dep 2.0.0');
});

test('two stacks starting at once after an edit both get the one complete build', async () => {
  await put(
    'services/hello/src/hello-worker.ts',
    "import { parentPort } from 'node:worker_threads';\nparentPort?.postMessage('worker ran again');\n",
  );
  const [a, b] = await Promise.all([ensureBundles(root), ensureBundles(root)]);
  assert.equal(a.dir, b.dir);
  assert.equal((await runMain(a)).worker, 'worker ran again');
  const left = (await readdir(join(root, '.bundles'))).filter((e) => e.startsWith('.tmp-'));
  assert.deepEqual(left, [], 'no half-written build is left behind');
  assert.ok(existsSync(join(a.dir, 'hello', 'dist', 'main.js.map')));
});
