/**
 * `npm start` as a person runs it, from a checkout of its own: its embedded PostgreSQL keeps
 * fsync on; a second start beside it is refused, naming it and the fix; a service killed with
 * SIGKILL is logged and restarted while MCP calls succeed again; its PostgreSQL killed with
 * SIGKILL is restarted, a service that crashes meanwhile waits for it, and every service works
 * again; Ctrl-C (SIGINT to the terminal's process group) drains the services, then stops
 * PostgreSQL, restarting nothing; killed with SIGKILL, npm start takes its services and its
 * PostgreSQL with it; what is left running when its watchdog dies too is named by the next start
 * and stopped by `--replace`; and as root it works from a checkout under a private directory
 * (like /root, mode 700).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { chmod, mkdtemp, readdir, readFile, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { copyCheckout } from '@adsmcp/testkit/checkout-copy';
import { startEmbeddedPostgres } from '@adsmcp/testkit/embedded-postgres';
import { freePort } from '@adsmcp/testkit/free-port';
import { type KafkaBrokerCluster, startKafkaBroker } from '@adsmcp/testkit/kafka-broker';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import { describeFailure } from '../../scripts/start.ts';

const cleanup: string[] = [];

/**
 * onTheBroker resolves once the broker holds `topic` and a consumer group of `topic`'s service
 * has members (its consumers joined), or fails after a minute.
 */
async function onTheBroker(bootstrap: string[], topic: string): Promise<void> {
  const admin = new Kafka({
    clientId: 'npm-start-test',
    brokers: bootstrap,
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  try {
    const until = Date.now() + 60_000;
    for (;;) {
      const topics = await admin.listTopics();
      const { groups } = await admin.describeGroups((await admin.listGroups()).groups.map((g) => g.groupId));
      if (topics.includes(topic) && groups.some((g) => g.state === 'Stable' && g.members.length > 0)) return;
      assert.ok(
        Date.now() < until,
        `topics ${topics.join(', ')}; groups ${JSON.stringify(groups.map((g) => [g.groupId, g.state]))}`,
      );
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  } finally {
    await admin.disconnect();
  }
}

after(async () => {
  for (const dir of cleanup) await rm(dir, { recursive: true, force: true });
});

/** The packages that hold PostgreSQL: installed for real in a checkout that must run its own. */
const POSTGRES_PACKAGES = ['embedded-postgres', '@embedded-postgres'];

/** A checkout of this working tree under `parent`; with `ownPostgres`, PostgreSQL's packages copied in. */
const checkout = (parent: string, ownPostgres = false) =>
  copyCheckout(parent, ownPostgres ? POSTGRES_PACKAGES : []);

interface Started {
  child: ChildProcess;
  lines: string[];
  exited: Promise<number | null>;
  /** Resolves with the first line (from now on, or already printed) that `re` matches. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
}

/**
 * Runs `npm start`'s command (package.json: node --import tsx scripts/start.ts) in `dir`, with
 * `args` as after `npm start --`. `terminal`: in a process group of its own, as a shell runs a
 * command in the foreground, so that a Ctrl-C can be sent to the whole group.
 */
function npmStart(
  dir: string,
  port: number,
  extraEnv: Record<string, string> = {},
  args: string[] = [],
  terminal = false,
): Started {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), ...extraEnv };
  delete env.DATABASE_URL; // the test runner's database; npm start starts its own
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts', ...args], {
    cwd: dir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: terminal,
  });
  const lines: string[] = [];
  const waiters = new Set<(line: string) => void>();
  const take = (carry: { rest: string }) => (chunk: Buffer) => {
    const parts = (carry.rest + chunk.toString('utf8')).split('\n');
    carry.rest = parts.pop() ?? '';
    // Each service line starts with its time (`10:42:01.123Z `); the patterns below read what follows.
    for (const line of parts.map((p) => p.replace(/^\d{2}:\d{2}:\d{2}\.\d{3}Z /, ''))) {
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
async function succeedsWithin(
  client: McpTestClient,
  name: string,
  timeoutMs: number,
  args: Record<string, unknown> = {},
): Promise<number> {
  const started = Date.now();
  let last = '';
  while (Date.now() - started < timeoutMs) {
    const res = await client.callTool(name, args).catch((err: unknown) => ({ isError: true, error: err }));
    if (res.isError !== true) return Date.now() - started;
    last = JSON.stringify(res);
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${name} still failing after ${timeoutMs} ms: ${last}`);
}

/** The pids npm start reports for what it started: `<tag> | [npm start] started (pid N)`. */
function startedPids(lines: string[]): Map<string, number> {
  const pids = new Map<string, number>();
  for (const line of lines) {
    const m = /^(\S+)\s+\| \[npm start\] started \(pid (\d+)\)/.exec(line);
    if (m) pids.set(m[1] as string, Number(m[2]));
  }
  return pids;
}

/** Resolves once none of `pids` runs; rejects naming those still running after `timeoutMs`. */
async function goneWithin(pids: Map<string, number>, timeoutMs: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    const left = [...pids].filter(([, pid]) => alive(pid));
    if (left.length === 0) return Date.now() - started;
    if (Date.now() - started > timeoutMs)
      throw new Error(
        `still running after ${timeoutMs} ms: ${left.map(([n, p]) => `${n} (pid ${p})`).join(', ')}`,
      );
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Escapes text for a RegExp. */
const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

test('a failed start says why, whatever was thrown', () => {
  assert.equal(describeFailure(new Error('PORT must be a port number')), 'PORT must be a port number');
  assert.equal(
    describeFailure(new Error('could not seed', { cause: new Error('admin exited 1') })),
    'could not seed (because: admin exited 1)',
  );
  // A refused connection to both loopback addresses: an AggregateError with no message of its own.
  assert.equal(
    describeFailure(
      new AggregateError([
        new Error('connect ECONNREFUSED 127.0.0.1:5432'),
        new Error('connect ECONNREFUSED ::1:5432'),
      ]),
    ),
    'connect ECONNREFUSED 127.0.0.1:5432; connect ECONNREFUSED ::1:5432',
  );
  assert.match(describeFailure(new TypeError('')), /^TypeError without a message, thrown at /);
  assert.equal(describeFailure('the bundles are missing'), 'the bundles are missing');
  assert.equal(describeFailure({ code: 'E42' }), "{ code: 'E42' }");
  for (const nothing of [undefined, null, ''])
    assert.match(describeFailure(nothing), /^a step failed (without saying why|with an empty message)/);
});

describe('npm start from a checkout', { timeout: 600_000 }, () => {
  /** One checkout for the tests that run in order below (the second reuses its bundles and data). */
  let shared: Promise<string> | undefined;
  const sharedCheckout = () => {
    shared ??= (async () => {
      const parent = await mkdtemp(join(tmpdir(), 'adsmcp-start-'));
      cleanup.push(parent);
      await chmod(parent, 0o755); // mkdtemp makes it private; a checkout's usual parent is not
      return checkout(parent);
    })();
    return shared;
  };

  test('keeps fsync on, refuses a second start, recovers from a killed service and a killed PostgreSQL, and Ctrl-C drains the services before PostgreSQL stops', async () => {
    const dir = await sharedCheckout();
    const port = await freePort();
    const run = npmStart(dir, port, {}, [], true);
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

      const pids = startedPids(run.lines);
      assert.equal(
        pids.size,
        7,
        `every process and PostgreSQL is reported with its pid:\n${run.lines.join('\n')}`,
      );
      const postgresPort = Number(
        (
          await run.waitFor(
            /^postgres\s+\| \[npm start\] started \(pid \d+\), accepting connections on port (\d+)$/,
          )
        )[1],
      );

      // A second start from the same checkout is refused before it starts anything, saying what
      // runs (npm start, PostgreSQL and the gateway with their pids and ports) and the fix.
      const second = npmStart(dir, port);
      assert.equal(await second.exited, 1, second.lines.join('\n'));
      const said = second.lines.join('\n');
      assert.match(
        said,
        new RegExp(`a stack is already running from this checkout: npm start \\(pid ${run.child.pid},`),
      );
      assert.match(said, new RegExp(`PostgreSQL\\s+pid ${pids.get('postgres')}, port ${postgresPort}`));
      assert.match(said, new RegExp(`gateway\\s+pid ${pids.get('gateway')}, port ${port}`));
      assert.match(said, /run `npm start -- --replace` to stop it and start again/);
      assert.ok(!/undefined/.test(said), said);
      assert.equal(alive(run.child.pid as number), true, 'the running stack is left alone');

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

        // PostgreSQL killed outright: one line says so and that it is being restarted; a service
        // that crashes while it is down waits for it instead of crash-looping.
        const beforeKill = run.lines.length;
        const postmaster = pids.get('postgres') as number;
        process.kill(postmaster, 'SIGKILL');
        await run.waitFor(
          new RegExp(
            `^postgres\\s+\\| \\[npm start\\] PostgreSQL \\(pid ${postmaster}\\) exited unexpectedly \\(signal SIGKILL\\); restarting it in 0\\.5 s on port ${postgresPort}, data in ${literal(join(dir, '.data', 'pg'))}$`,
          ),
          30_000,
        );
        process.kill(pids.get('marketing') as number, 'SIGKILL');
        const back = await run.waitFor(
          new RegExp(
            `^postgres\\s+\\| \\[npm start\\] PostgreSQL is back \\(pid (\\d+)\\), accepting connections on port ${postgresPort}$`,
          ),
          60_000,
        );
        assert.equal(
          await postgresServingFrom(join(dir, '.data', 'pg')),
          Number(back[1]),
          'the new server runs on the same data',
        );
        const restarted = await run.waitFor(/^marketing\s+\| \[npm start\] restarted \(pid (\d+)\)/, 120_000);
        pids.set('marketing', Number(restarted[1]));
        pids.set('postgres', Number(back[1]));
        const notices = run.lines.slice(beforeKill).filter((l) => l.includes('[npm start]'));
        const at = (re: RegExp) => notices.findIndex((l) => re.test(l));
        const waited = at(
          /^marketing\s+\| \[npm start\] exited unexpectedly \(signal SIGKILL\) while PostgreSQL is down; restarting once it is back$/,
        );
        assert.ok(waited >= 0, `the crash while PostgreSQL was down is reported:\n${notices.join('\n')}`);
        assert.ok(at(/^postgres\s+\| \[npm start\] PostgreSQL is back/) > waited, notices.join('\n'));
        assert.ok(
          at(/^marketing\s+\| \[npm start\] PostgreSQL is back; restarting$/) >
            at(/^postgres\s+\| \[npm start\] PostgreSQL is back/),
          `marketing is restarted only once PostgreSQL is back:\n${notices.join('\n')}`,
        );
        assert.deepEqual(
          notices.filter((l) => /exited unexpectedly/.test(l) && !/^(postgres|marketing) /.test(l)),
          [],
          'no other service went down with PostgreSQL',
        );
        // Every service works again, each through its own database pool, with nothing done by hand.
        await succeedsWithin(client, 'ads_list_changes', 60_000);
        await succeedsWithin(client, 'ads_list_marketing_items', 60_000);
        await succeedsWithin(client, 'ads_list_optimizers', 60_000);
        await succeedsWithin(client, 'ads_list_accounts', 60_000);
        const accounts = await client.callTool('ads_list_accounts', {});
        const account = (accounts.structuredContent as { accounts: { account_id: string }[] }).accounts[0];
        assert.ok(account, JSON.stringify(accounts));
        await succeedsWithin(client, 'ads_list_ads', 60_000, { account_id: account.account_id });
      } finally {
        await client.close().catch(() => undefined);
      }

      const postgres = await postgresServingFrom(join(dir, '.data', 'pg'));
      assert.ok(postgres, "npm start's PostgreSQL runs on .data/pg");
      const before = run.lines.length;
      // Ctrl-C in a terminal: SIGINT to every process of the foreground process group.
      process.kill(-(run.child.pid as number), 'SIGINT');
      const code = await Promise.race([
        run.exited,
        new Promise<'hung'>((r) => setTimeout(() => r('hung'), 90_000)),
      ]);
      assert.equal(code, 0, `npm start exits cleanly on Ctrl-C:\n${run.lines.slice(-30).join('\n')}`);
      const shutdown = run.lines.slice(before);
      assert.ok(
        !shutdown.some((l) => /\[npm start\] (.*exited unexpectedly|restarted)/.test(l)),
        `nothing is restarted during shutdown:\n${shutdown.join('\n')}`,
      );
      // Each service drained within its drain time (20 s) and exited 0, all before PostgreSQL
      // was asked to stop.
      const stopping = shutdown.findIndex((l) =>
        /^postgres\s+\| \[npm start\] stopping \(the services have stopped\)$/.test(l),
      );
      const stopped = shutdown.findIndex((l) => /^postgres\s+\| \[npm start\] stopped$/.test(l));
      assert.ok(stopping >= 0 && stopped > stopping, `PostgreSQL is stopped last:\n${shutdown.join('\n')}`);
      for (const service of [
        'gateway',
        'changes',
        'optimizer',
        'marketing',
        'upstream-proxy',
        'ads-sandbox',
      ]) {
        const i = shutdown.findIndex((l) =>
          new RegExp(
            `^${service}\\s+\\| \\[npm start\\] stopped \\(exit code 0\\) in (\\d+(\\.\\d)?) s$`,
          ).test(l),
        );
        assert.ok(
          i >= 0 && i < stopping,
          `${service} drained before PostgreSQL stopped:\n${shutdown.join('\n')}`,
        );
        const seconds = Number(/in (\S+) s$/.exec(shutdown[i] as string)?.[1]);
        assert.ok(seconds < 20, `${service} stopped within its drain time: ${shutdown[i]}`);
      }
      assert.ok(
        !shutdown.some((l) => /terminating connection due to administrator command|ECONNREFUSED/.test(l)),
        `no service lost its database while draining:\n${shutdown.join('\n')}`,
      );
      for (const [service, pid] of pids) assert.equal(alive(pid), false, `${service} (pid ${pid}) stopped`);
      assert.equal(alive(postgres), false, 'PostgreSQL stopped');
      await assert.rejects(
        readFile(join(dir, '.data', 'npm-start.json')),
        'the stopped stack is no longer recorded',
      );
    } finally {
      if (run.child.exitCode === null) process.kill(-(run.child.pid as number), 'SIGKILL');
    }
  });

  test('killed with SIGKILL, npm start takes its services and PostgreSQL with it; what outlives a killed watchdog is named by the next start and replaced', async () => {
    const dir = await sharedCheckout();
    const port = await freePort();
    const recorded = async () =>
      JSON.parse(await readFile(join(dir, '.data', 'npm-start.json'), 'utf8')) as { watchdogPid: number };

    // Its watchdog killed with it: the services stop by themselves (the channel to their parent
    // ends), and only PostgreSQL is left, which the next start names.
    const first = npmStart(dir, port);
    let replaced: Started | undefined;
    let last: Started | undefined;
    let broker: KafkaBrokerCluster | undefined;
    try {
      await first.waitFor(/^Ready\.$/);
      const pids = startedPids(first.lines);
      const postgres = pids.get('postgres') as number;
      pids.delete('postgres');
      const { watchdogPid } = await recorded();
      process.kill(watchdogPid, 'SIGKILL');
      first.child.kill('SIGKILL');
      await goneWithin(pids, 10_000);
      assert.equal(alive(postgres), true, 'with its watchdog gone too, PostgreSQL is left running');

      const refused = npmStart(dir, port);
      assert.equal(await refused.exited, 1, refused.lines.join('\n'));
      const said = refused.lines.join('\n');
      assert.match(
        said,
        new RegExp(
          `processes left running by an npm start of this checkout that is gone \\(pid ${first.child.pid}\\) still hold its ports and data:`,
        ),
      );
      assert.match(said, new RegExp(`PostgreSQL\\s+pid ${postgres}, port \\d+, data in `));
      assert.match(said, /Run `npm start -- --replace` to stop them and start again\./);
      assert.ok(!/undefined/.test(said), said);
      // A server that cannot start on the data directory says why (it once said "undefined").
      await assert.rejects(
        startEmbeddedPostgres({ dataDir: join(dir, '.data', 'pg'), persistent: true }),
        /^Error: PostgreSQL exited \(exit code 1\) before accepting connections: .*lock file "postmaster\.pid" already exists/,
      );

      replaced = npmStart(dir, port, {}, ['--replace']);
      await replaced.waitFor(/^Ready\.$/);
      assert.equal(alive(postgres), false, '--replace stopped the PostgreSQL left running');
      assert.ok(replaced.lines.includes('stopped it'), replaced.lines.join('\n'));

      // Killed with SIGKILL: everything it started is gone within a few seconds.
      const all = startedPids(replaced.lines);
      assert.equal(all.size, 7, replaced.lines.join('\n'));
      all.set('watchdog', (await recorded()).watchdogPid);
      replaced.child.kill('SIGKILL');
      const took = await goneWithin(all, 10_000);
      assert.ok(took < 10_000);
      await assert.rejects(readFile(join(dir, '.data', 'npm-start.json')), 'the watchdog removed the record');

      // And the next start starts, with nothing to say about the one before; this one on Apache
      // Kafka, as `KAFKA_BROKERS=… npm start` runs: the services make their topics on the broker
      // and their consumers join their groups there.
      broker = await startKafkaBroker();
      last = npmStart(dir, port, { KAFKA_BROKERS: broker.brokers });
      await last.waitFor(/^Ready\.$/);
      assert.ok(
        last.lines.some((l) => l.trim() === `Bus:             Kafka at ${broker?.brokers}`),
        last.lines.join('\n'),
      );
      await onTheBroker(broker.bootstrap, 'changes.apply');
      last.child.kill('SIGTERM');
      assert.equal(await last.exited, 0, last.lines.slice(-30).join('\n'));
    } finally {
      for (const run of [first, replaced, last])
        if (run && run.child.exitCode === null) run.child.kill('SIGKILL');
      await broker?.stop();
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
