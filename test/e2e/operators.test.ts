/**
 * The operators' command (`npm run admin -- …`) run for real against the whole stack: a token's
 * name as the dashboard shows it, lifetimes that must be positive, an approval that shows what it
 * approves and asks first (on a real terminal), and workspace features turned on and off.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { launchBrowser } from '@adsmcp/testkit/browser';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import { REPO_ROOT, type SeedResult, type Stack } from '@adsmcp/testkit/stack';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let agent: McpTestClient;
let ads: { id: string; status: string }[];

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '200' } });
  ({ stack, seed } = e2e);
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  const list = await agent.callTool('ads_list_ads', { account_id: seed.accounts[0]?.account_id, limit: 20 });
  ads = (list.structuredContent as { ads: typeof ads }).ads.filter((a) => a.status === 'active');
  assert.ok(ads.length >= 3, 'the seeded account has active ads to change');
});

after(async () => {
  await agent?.close();
  await e2e?.stop();
});

/** The admin command's failure: its stderr, as `stack.admin` rejects with it. */
async function adminFails(args: string[]): Promise<string> {
  const err = await stack.admin(args).then(
    (out) => assert.fail(`admin ${args.join(' ')} was expected to fail; it printed ${out}`),
    (e: unknown) => (e instanceof Error ? e.message : String(e)),
  );
  return err;
}

/** An agent prepares pausing an active ad; returns the change. */
async function preparePause(): Promise<{ change_id: string; digest: string }> {
  const ad = ads.shift();
  assert.ok(ad, 'an active ad is left');
  const res = await agent.callTool('ads_update_ad', {
    account_id: seed.accounts[0]?.account_id,
    ad_id: ad.id,
    body: { status: 'paused' },
  });
  assert.notEqual(res.isError, true, JSON.stringify(res.structuredContent));
  return res.structuredContent as { change_id: string; digest: string };
}

async function changeStatus(id: string): Promise<string> {
  const res = await agent.callTool('ads_get_change', { change_id: id });
  return (res.structuredContent as { status: string }).status;
}

/**
 * Runs the admin command on a pseudo-terminal (util-linux `script`), answering `answer` once it
 * asks. Resolves with everything the terminal showed and the exit code.
 */
function adminOnTerminal(args: string[], answer: string): Promise<{ code: number | null; screen: string }> {
  const command = ['node', '--import', 'tsx', 'services/gateway/src/admin.ts', ...args].join(' ');
  const child = spawn('script', ['-qec', command, '/dev/null'], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...stack.adminEnv },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let screen = '';
  let answered = false;
  const onData = (c: Buffer) => {
    screen += c.toString('utf8');
    if (!answered && screen.includes('[y/N]')) {
      answered = true;
      child.stdin.write(`${answer}\r`);
    }
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      child.stdin.end();
      resolve({ code, screen });
    });
  });
}

describe('a command written wrongly', () => {
  test('a word too many, an unknown command or option exits 2 naming it, before anything is done', async () => {
    const tokens = async () =>
      JSON.parse(await stack.admin(['list-tokens', '--workspace', seed.workspaceId])) as {
        credential_id: string;
        revoked_at: string | null;
      }[];
    const before = (await tokens()).length;
    for (const [args, message] of [
      [
        ['create-token', 'Acme'],
        /create-token takes no argument without an option name; "Acme" is one too many/,
      ],
      [
        ['revoke-token', seed.credentialId, seed.credentialId],
        /revoke-token takes one argument \(the credential id\) without an option name/,
      ],
      [['craete-token'], /unknown command "craete-token"/],
      ...(
        [
          ['Demo workspace', /--name "Demo workspace" is the name of workspace .* already/],
          [seed.workspaceId.toUpperCase(), /--name must not be shaped as a UUID/],
          ['Acme\u202e', /--name must not contain control or format characters/],
        ] as const
      ).map(
        ([name, message]) =>
          [
            [
              'create-workspace',
              '--name',
              name,
              '--admin-email',
              'new@acme.example',
              '--admin-password',
              'pw-123456789',
            ],
            message,
          ] as const,
      ),
      [['create-token', '--workspcae', seed.workspaceId], /create-token: Unknown option '--workspcae'/],
    ] as const) {
      const refused = await stack.admin([...args]).then(
        (out) => assert.fail(`admin ${args.join(' ')} was expected to fail; it printed ${out}`),
        (e: Error & { exitCode?: number }) => e,
      );
      assert.equal(refused.exitCode, 2, `${args.join(' ')}: ${refused.message}`);
      assert.match(refused.message, message);
    }
    const after = await tokens();
    assert.equal(after.length, before, 'no token was made');
    assert.equal(after.find((t) => t.credential_id === seed.credentialId)?.revoked_at, null, 'none revoked');
  });
});

describe('create-token', () => {
  test('--name is the name the dashboard lists the connection under', async () => {
    const name = 'Claude on the laptop';
    const created = JSON.parse(
      await stack.admin(['create-token', '--workspace', seed.workspaceId, '--name', name]),
    ) as { credential_id: string };
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage();
      await page.goto(`${stack.gatewayUrl}/dashboard/login`);
      await page.fill('#email', seed.dashboardUser);
      await page.fill('#password', seed.dashboardPassword as string);
      await Promise.all([page.waitForURL(/\/dashboard$/), page.click('button[type=submit]')]);
      const row = page.locator(`tr[data-credential="${created.credential_id}"]`);
      assert.equal((await row.locator('td').first().innerText()).trim(), name);
    } finally {
      await browser.close();
    }
  });

  test('a name that is empty, too long or holds invisible characters is refused, naming --name', async () => {
    const cases: [string, RegExp][] = [
      ['   ', /--name must be 1 to 200 characters \(got 0\)/],
      ['x'.repeat(201), /--name must be 1 to 200 characters \(got 201\)/],
      ['laptop\u202Epot', /--name must not contain control or format characters \(found U\+202E\)/],
    ];
    for (const [name, message] of cases) {
      const err = await adminFails(['create-token', '--workspace', seed.workspaceId, '--name', name]);
      assert.match(err, message);
      assert.equal(err.split('\n').length, 1, err);
    }
  });

  test('--expires-in must be positive', async () => {
    for (const lifetime of ['0d', '0h', '0m', '-1d', '-30m']) {
      const err = await adminFails([
        'create-token',
        '--workspace',
        seed.workspaceId,
        `--expires-in=${lifetime}`,
      ]);
      assert.equal(
        err,
        `admin: --expires-in must be a positive duration such as 30d, 12h or 45m, or never (got "${lifetime}")`,
      );
    }
    const ok = JSON.parse(
      await stack.admin(['create-token', '--workspace', seed.workspaceId, '--expires-in', '1h']),
    ) as { expires_at: string };
    const inMs = Date.parse(ok.expires_at) - Date.now();
    assert.ok(inMs > 3_500_000 && inMs <= 3_600_000, ok.expires_at);
  });
});

describe('approve', () => {
  test('without a terminal and without --yes it shows the change, refuses, and approves nothing', async () => {
    const change = await preparePause();
    const err = await adminFails(['approve', change.change_id, '--workspace', seed.workspaceId]);
    assert.match(err, /Summary: .+/);
    assert.match(err, /^ {2}status: "active" -> "paused"$/m);
    assert.match(err, /^Exact request: (PATCH|POST|PUT) \/ads\/ad_\w+$/m);
    assert.match(err, new RegExp(`^Digest: ${change.digest}$`, 'm'));
    assert.match(
      err,
      /admin: approve asks for confirmation on a terminal and there is none; run it in a terminal, or add --yes/,
    );
    assert.equal(await changeStatus(change.change_id), 'prepared');
  });

  test('--yes approves after showing the change', async () => {
    const change = await preparePause();
    const out = JSON.parse(
      await stack.admin(['approve', change.change_id, '--workspace', seed.workspaceId, '--yes']),
    ) as { status: string; digest: string };
    assert.equal(out.status, 'approved');
    assert.equal(out.digest, change.digest);
    assert.equal(await changeStatus(change.change_id), 'approved');
  });

  test('on a terminal it shows the summary and the diff, then approves only when told yes', async () => {
    const change = await preparePause();
    const args = ['approve', change.change_id, '--workspace', seed.workspaceId];

    const no = await adminOnTerminal(args, 'n');
    assert.equal(no.code, 1, no.screen);
    const question = no.screen.indexOf('[y/N]');
    const diff = no.screen.indexOf('status: "active" -> "paused"');
    assert.ok(diff >= 0 && diff < question, `the diff is shown before the question:\n${no.screen}`);
    assert.ok(no.screen.indexOf('Summary: ') < question, no.screen);
    assert.match(no.screen, new RegExp(`not approved; change ${change.change_id} is still prepared`));
    assert.equal(await changeStatus(change.change_id), 'prepared');

    const yes = await adminOnTerminal(args, 'y');
    assert.equal(yes.code, 0, yes.screen);
    assert.match(yes.screen, /"status":"approved"/);
    assert.equal(await changeStatus(change.change_id), 'approved');
  });

  test('a change that is not prepared is refused before anything is asked', async () => {
    const change = await preparePause();
    await stack.admin(['approve', change.change_id, '--workspace', seed.workspaceId, '--yes']);
    const err = await adminFails(['approve', change.change_id, '--workspace', seed.workspaceId, '--yes']);
    assert.equal(
      err,
      `admin: change ${change.change_id} is approved; only a prepared change can be approved`,
    );
  });
});

describe('enable-feature and disable-feature', () => {
  test('turn a feature on and off for an existing workspace; its tools follow from the next call', async () => {
    const ws = JSON.parse(
      await stack.admin([
        'create-workspace',
        '--name',
        'Feature flags',
        '--admin-email',
        'flags@example.test',
        '--admin-password',
        'flags-password-1',
      ]),
    ) as { workspace_id: string };
    const { token } = JSON.parse(
      await stack.admin(['create-token', '--workspace', ws.workspace_id, '--name', 'flags']),
    ) as { token: string };
    const client = await connectClient('v1', stack.mcpUrl, token);
    const listOptimizers = async () => {
      const res = await client.callTool('ads_list_optimizers', {});
      return res.isError === true ? (res.structuredContent as { error: { code: string } }).error.code : 'ok';
    };
    try {
      assert.equal(await listOptimizers(), 'feature_disabled');

      const on = JSON.parse(
        await stack.admin(['enable-feature', 'optimizer', '--workspace', 'Feature flags']),
      ) as { workspace_id: string; features: string[]; changed: boolean };
      assert.deepEqual([on.workspace_id, on.features, on.changed], [ws.workspace_id, ['optimizer'], true]);
      assert.equal(await listOptimizers(), 'ok');

      const again = JSON.parse(
        await stack.admin(['enable-feature', 'optimizer', '--workspace', ws.workspace_id]),
      ) as { features: string[]; changed: boolean };
      assert.deepEqual([again.features, again.changed], [['optimizer'], false]);

      const off = JSON.parse(
        await stack.admin(['disable-feature', 'optimizer', '--workspace', ws.workspace_id]),
      ) as { features: string[]; changed: boolean };
      assert.deepEqual([off.features, off.changed], [[], true]);
      assert.equal(await listOptimizers(), 'feature_disabled');
    } finally {
      await client.close();
    }
  });

  test('an unknown feature, a missing one or an unknown workspace is a clear error', async () => {
    assert.equal(
      await adminFails(['enable-feature', 'optimiser', '--workspace', seed.workspaceId]),
      'admin: unknown feature "optimiser"; features are optimizer, performance_imports',
    );
    assert.equal(
      await adminFails(['disable-feature', '--workspace', seed.workspaceId]),
      'admin: disable-feature needs a feature: one of optimizer, performance_imports',
    );
    assert.equal(
      await adminFails([
        'create-workspace',
        '--name',
        'Typo',
        '--admin-email',
        'typo@example.test',
        '--admin-password',
        'typo-password-1',
        '--features',
        'optimizer,imports',
      ]),
      'admin: unknown feature "imports"; features are optimizer, performance_imports',
    );
    assert.equal(
      await adminFails(['enable-feature', 'optimizer', '--workspace', 'No such workspace']),
      'admin: no workspace "No such workspace"',
    );
  });
});

describe('the admin command names what is wrong, never a database error', () => {
  test('ids that are not UUIDs are refused by the command, before the database sees them', async () => {
    // After `--`, so that 36 dashes reach the command as its argument.
    for (const id of ['0'.repeat(36), '-'.repeat(36)]) {
      assert.equal(
        await adminFails(['revoke-token', '--', id]),
        `admin: revoke-token needs a credential id (a UUID such as 123e4567-e89b-12d3-a456-426614174000); "${id}" is not one`,
      );
      assert.equal(
        await adminFails(['reject', '--reason', 'no', '--workspace', seed.workspaceId, '--', id]),
        `admin: reject needs a change id (a UUID such as 123e4567-e89b-12d3-a456-426614174000); "${id}" is not one`,
      );
    }
    assert.equal(
      await adminFails(['revoke-token', '00000000-0000-4000-8000-000000000000']),
      'admin: no unrevoked credential 00000000-0000-4000-8000-000000000000',
    );
  });

  test('list-tokens takes the workspace by name as its usage says, and an unknown one is named', async () => {
    const byName = JSON.parse(
      await stack.admin(['list-tokens', '--workspace', 'Demo workspace']),
    ) as unknown[];
    const byId = JSON.parse(await stack.admin(['list-tokens', '--workspace', seed.workspaceId])) as unknown[];
    assert.deepEqual(byName, byId);
    assert.ok(byName.length > 0);
    assert.equal(
      await adminFails(['list-tokens', '--workspace', 'nonexistent']),
      'admin: no workspace "nonexistent"',
    );
  });

  test('add-user with an email that already has an account says so', async () => {
    const args = [
      'add-user',
      '--workspace',
      'Demo workspace',
      '--password',
      'twelve-chars-at-least',
      '--role',
    ];
    await stack.admin([...args, 'viewer', '--email', 'twice@demo.example']);
    assert.equal(
      await adminFails([...args, 'editor', '--email', 'Twice@demo.example']),
      'admin: a user twice@demo.example already exists (in workspace Demo workspace); an email belongs to one person',
    );
  });
});
