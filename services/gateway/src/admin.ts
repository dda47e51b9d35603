/**
 * The operators' command: `npm run admin -- <command> [options]`. It works on the gateway's
 * database (DATABASE_URL, or the one `npm start` recorded in .data/dev.json).
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { AuditService } from '@adsmcp/proto/changes/v1/audit_pb';
import { type Change, ChangesService } from '@adsmcp/proto/changes/v1/changes_pb';
import {
  ControlsService,
  type Freeze,
  FreezeSchema,
  SpendEnvelopeSchema,
} from '@adsmcp/proto/changes/v1/controls_pb';
import { OptimizerService } from '@adsmcp/proto/optimizer/v1/optimizer_pb';
import { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { createPool, migrate, type Pool } from '@adsmcp/runtime/db';
import { isUuid } from '@adsmcp/runtime/ids';
import { createPrincipalSigner, type PrincipalSigner, type Scope } from '@adsmcp/runtime/principal';
import { createServiceClient } from '@adsmcp/runtime/service-client';
import { hiddenCharacter } from '@adsmcp/runtime/text';
import { toJson } from '@bufbuild/protobuf';
import type { CallOptions, Client } from '@connectrpc/connect';
import { reviewText } from './admin-review.ts';
import { statusWord } from './catalogue/change-view.ts';
import { onBehalfOf } from './deps.ts';
import { hashToken, parseLifetime } from './domain/credentials.ts';
import { addUser, createWorkspace, issueToken } from './domain/identity.ts';
import { issuedToolGroups, TOOL_GROUP_IDS } from './mcp/tool-groups.ts';
import {
  disableWorkspaceFeature,
  enableWorkspaceFeature,
  findCredentialByHash,
  findFirstAdmin,
  findUserByEmail,
  findWorkspace,
  insertAudit,
  listCredentials,
  revokeCredential,
  setWorkspaceFeatures,
  type UserRow,
  type WorkspaceRow,
} from './store/identity-store.ts';

/**
 * The workspace features an operator can turn on: `optimizer` (the optimizer tools) and
 * `performance_imports` (the performance-import tools, which the platform administrator enables).
 */
const FEATURES = ['optimizer', 'performance_imports'] as const;

const USAGE = `usage: npm run admin -- <command> [options]

  create-token [--workspace <id|name>] [--user <email>] [--scopes read,write] [--expires-in 30d|12h|45m|never] [--name <text>] [--tools <groups>]
      Creates an MCP access token and prints it (the only time it is shown). --name (1 to 200
      characters) is how the dashboard's connections list shows it; --expires-in (default 90d)
      must be positive. --tools (tool groups, comma-separated: ${TOOL_GROUP_IDS.join(', ')})
      is what its connections are served; an MCP URL's ?tools= narrows within them, never past
      them. Without it, every group.
  revoke-token <credential-id>
      Revokes one MCP credential; requests with it get HTTP 401 from then on.
  list-tokens [--workspace <id|name>]
      Lists the workspace's MCP credentials (never the tokens).
  create-workspace --name <text> --admin-email <email> --admin-password <text> [--features a,b]
  add-user --workspace <id|name> --email <email> --password <text> --role admin|editor|viewer
  approve <change-id> [--workspace <id|name>] [--user <email>] [--yes]
      Approves a prepared change as a person (the user, default the workspace's first admin).
      It prints the change's summary, what it changes and the exact request, then asks for
      confirmation on the terminal; --yes approves without asking (needed without a terminal).
  reject <change-id> --reason <text> [--workspace <id|name>] [--user <email>]
      Rejects a prepared change as a person. Both need CHANGES_URL.
  unknown-outcomes [--workspace <id|name>]
      Lists the changes whose apply outcome is unknown: sent to the ad platform, no answer
      recorded, so they may or may not have been applied (JSON).
  resolve <change-id> --send-again|--applied|--not-applied [--note <text>] [--workspace <id|name>] [--user <email>]
      Settles such a change as a person: sends it again with the same idempotency key (within
      24 hours of its first send), or records that it is (--applied) or is not (--not-applied) on
      the ad platform. Both need CHANGES_URL.
  freeze (--account <id> | --workspace <id|name>) --reason <text> [--user <email>]
      Stops writes to one ad account, or with --workspace alone to the whole workspace: prepares
      and apply requests are refused naming the reason, queued applies wait unsent.
  unfreeze (--account <id> | --workspace <id|name>) [--user <email>]
      Lifts that freeze; the applies it held are queued again at once (JSON: how many).
  set-envelope --account <id> (--micros <n> | --none) [--fail-closed] [--user <email>]
      Sets the account's spend envelope: the most its daily budgets may rise in any rolling 24
      hours, in micros of the account currency; --none removes it, and --fail-closed then
      refuses every change that raises a daily budget. All three need CHANGES_URL.
  enable-feature <feature> [--workspace <id|name>]
  disable-feature <feature> [--workspace <id|name>]
      Turns a workspace feature on or off (${FEATURES.join(', ')}); its tools work, or are
      refused, from the next call. Without the optimizer feature no optimizer review is
      scheduled (the optimizer service hears of it first: it needs OPTIMIZER_URL).
  verify-audit [--workspace <id|name>]
      Checks the hash chain of the workspace's audit log (every workspace's without --workspace):
      prints "audit chain verifies: N rows", or names the first broken row (its number, time and
      kind) and exits with status 1. Needs CHANGES_URL.
  seed-demo [--token <existing dev token>]
      Creates (once) the demo workspace, its admin and two sandbox ad accounts, and prints JSON with
      a dev token (the given one when it is still valid). Needs UPSTREAM_PROXY_URL, OPTIMIZER_URL,
      SANDBOX_URL, SANDBOX_ADMIN_TOKEN and PRINCIPAL_PRIVATE_KEY.`;

const DEMO_WORKSPACE = 'Demo workspace';
const DEMO_ADMIN = 'admin@demo.example';
const DEMO_FEATURES = ['optimizer', 'performance_imports'];

/**
 * What `npm start` recorded for this checkout: .data/dev.json (database, service addresses) and
 * .data/secrets.json (keys). The environment always wins; these make the command work as is
 * next to a running `npm start`.
 */
function localStack(): Record<string, string | undefined> {
  const read = (file: string): Record<string, unknown> => {
    try {
      return JSON.parse(readFileSync(resolve('.data', file), 'utf8')) as Record<string, unknown>;
    } catch {
      return {};
    }
  };
  const dev = read('dev.json') as { databaseUrl?: string; services?: Record<string, string | undefined> };
  const secrets = read('secrets.json') as { principalPrivateKey?: string; sandboxAdminToken?: string };
  return {
    DATABASE_URL: dev.databaseUrl,
    CHANGES_URL: dev.services?.changesUrl,
    OPTIMIZER_URL: dev.services?.optimizerUrl,
    UPSTREAM_PROXY_URL: dev.services?.upstreamProxyUrl,
    SANDBOX_URL: dev.services?.sandboxUrl,
    PRINCIPAL_PRIVATE_KEY: secrets.principalPrivateKey,
    SANDBOX_ADMIN_TOKEN: secrets.sandboxAdminToken,
  };
}

function need(name: string): string {
  const v = process.env[name] || localStack()[name];
  if (!v)
    throw new Error(`${name} is required for this command (set it, or run it next to a running npm start)`);
  return v;
}

function databaseUrl(): string {
  return need('DATABASE_URL');
}

/** The signer and call options for acting as `user` through an operator's command. */
async function asOperator(user: UserRow): Promise<{ signer: PrincipalSigner; as: CallOptions }> {
  const signer = await createPrincipalSigner(need('PRINCIPAL_PRIVATE_KEY'));
  const as = onBehalfOf({
    workspaceId: user.workspace_id,
    credentialId: `operator:${user.email}`,
    userId: user.id,
    role: user.role,
    scopes: ['read', 'write'],
    via: 'operator',
  });
  return { signer, as };
}

/**
 * Tells the optimizer service whether `admin`'s workspace has the optimizer feature: without it
 * the service schedules no review for the workspace's optimizers.
 */
async function tellOptimizer(admin: UserRow, enabled: boolean): Promise<void> {
  const { signer, as } = await asOperator(admin);
  const optimizer = createServiceClient(OptimizerService, need('OPTIMIZER_URL'), 'optimizer', signer);
  try {
    await optimizer.setWorkspaceFeature({ enabled }, as);
  } catch (err) {
    throw new Error(
      `the optimizer service did not take the change (${err instanceof Error ? err.message : String(err)}); nothing was changed, run the command again`,
    );
  }
}

/**
 * A --name as the dashboard shows it (a credential's, a workspace's), trimmed: 1 to 200
 * characters, none of them hidden. A misuse of the command (exit code 2) when it breaks a rule.
 */
function displayedName(given: string): string {
  const name = given.trim();
  const length = [...name].length;
  if (length < 1 || length > 200) throw new UsageError(`--name must be 1 to 200 characters (got ${length})`);
  const hidden = hiddenCharacter(name);
  if (hidden !== undefined)
    throw new UsageError(`--name must not contain control or format characters (found ${hidden})`);
  return name;
}

/** The credential's name as the dashboard's connections list shows it. */
function tokenName(given: string | undefined): string {
  return given === undefined ? 'created with npm run admin' : displayedName(given);
}

/**
 * A new workspace's --name: a displayed name that --workspace can find it by, so not shaped as a
 * UUID (read as an id) and not another workspace's (the oldest would be found).
 */
async function workspaceName(pool: Pool, given: string): Promise<string> {
  const name = displayedName(given);
  if (isUuid(name))
    throw new UsageError('--name must not be shaped as a UUID: --workspace would read it as an id');
  const taken = await findWorkspace(pool, name);
  if (taken !== undefined)
    throw new UsageError(
      `--name ${JSON.stringify(name)} is the name of workspace ${taken.id} already: --workspace finds a workspace by its name, so each must differ`,
    );
  return name;
}

/** --expires-in in milliseconds (undefined: never); zero, negative and malformed are refused. */
function expiresIn(text: string): number | undefined {
  const rule = `--expires-in must be a positive duration such as 30d, 12h or 45m, or never (got "${text}")`;
  let ms: number | undefined;
  try {
    ms = parseLifetime(text);
  } catch {
    throw new Error(rule);
  }
  if (ms !== undefined && ms <= 0) throw new Error(rule);
  return ms;
}

function knownFeature(given: string | undefined, command: string): string {
  if (!given) throw new Error(`${command} needs a feature: one of ${FEATURES.join(', ')}`);
  if (!(FEATURES as readonly string[]).includes(given))
    throw new Error(`unknown feature "${given}"; features are ${FEATURES.join(', ')}`);
  return given;
}

/** Asks a yes/no question on the terminal; anything but y or yes (or a closed input) is no. */
async function confirmed(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const closed = new Promise<string>((r) => rl.once('close', () => r('')));
    const answer = await Promise.race([rl.question(question), closed]);
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

function parseScopes(text: string): Scope[] {
  const scopes = text.split(',').map((s) => s.trim());
  for (const s of scopes)
    if (s !== 'read' && s !== 'write') throw new Error(`unknown scope "${s}"; scopes are read and write`);
  return [...new Set(scopes)] as Scope[];
}

/** The workspace named by --workspace (its id or its name), else the demo workspace. */
async function chosenWorkspace(pool: Pool, given: string | undefined): Promise<WorkspaceRow> {
  if (given !== undefined) {
    const ws = await findWorkspace(pool, given);
    if (!ws) throw new Error(`no workspace "${given}"`);
    return ws;
  }
  const ws = await findWorkspace(pool, DEMO_WORKSPACE);
  if (!ws) throw new Error('--workspace is required (there is no demo workspace)');
  return ws;
}

/** The one resolution `resolve` was given: --send-again, --applied or --not-applied. */
function resolutionOf(v: { 'send-again': boolean; applied: boolean; 'not-applied': boolean }): string {
  const given = [
    v['send-again'] ? 'send_again' : undefined,
    v.applied ? 'applied' : undefined,
    v['not-applied'] ? 'not_applied' : undefined,
  ].filter((r) => r !== undefined);
  if (given.length !== 1)
    throw new Error(
      `resolve needs exactly one of --send-again, --applied or --not-applied (got ${given.length === 0 ? 'none' : given.join(' and ')})`,
    );
  return given[0] as string;
}

/** The id a command names by its first argument, which must be a UUID. */
function uuidArgument(given: string | undefined, command: string, what: string): string {
  if (given === undefined) throw new Error(`${command} needs a ${what} id (a UUID)`);
  if (!isUuid(given))
    throw new Error(
      `${command} needs a ${what} id (a UUID such as 123e4567-e89b-12d3-a456-426614174000); "${given}" is not one`,
    );
  return given.toLowerCase();
}

async function seedDemo(pool: Pool, existingToken: string | undefined): Promise<Record<string, unknown>> {
  let ws = await findWorkspace(pool, DEMO_WORKSPACE);
  let password: string | undefined;
  if (ws === undefined) {
    password = `demo-${crypto.randomUUID().slice(0, 18)}`;
    await createWorkspace(pool, {
      name: DEMO_WORKSPACE,
      features: DEMO_FEATURES,
      adminEmail: DEMO_ADMIN,
      adminPassword: password,
    });
    ws = await findWorkspace(pool, DEMO_WORKSPACE);
  }
  if (ws === undefined) throw new Error('demo workspace was not created');
  const admin = await findFirstAdmin(pool, ws.id);
  if (admin === undefined) throw new Error('demo workspace has no admin');
  const { signer, as } = await asOperator(admin);
  // The demo has every feature, also where an operator had switched one off.
  await tellOptimizer(admin, true);
  await setWorkspaceFeatures(pool, ws.id, [...new Set([...ws.features, ...DEMO_FEATURES])]);

  const upstream = createServiceClient(UpstreamService, need('UPSTREAM_PROXY_URL'), 'upstream-proxy', signer);
  await ensureDemoAccounts(upstream, as);

  const { token, credentialId } = await demoToken(pool, ws.id, existingToken);
  const final = await upstream.listAccounts({}, as);
  return {
    workspaceId: ws.id,
    dashboardUser: DEMO_ADMIN,
    // Known only when this run created the admin; later runs keep the one recorded then.
    dashboardPassword: password ?? null,
    token,
    credentialId,
    accounts: final.accounts.map((a) => ({
      account_id: a.accountId,
      name: a.name,
      currency: a.currency,
      upstream_account_id: a.upstreamAccountId,
    })),
  };
}

/** The demo's two sandbox ad accounts, each created and connected unless one of its name is there already. */
async function ensureDemoAccounts(upstream: Client<typeof UpstreamService>, as: CallOptions): Promise<void> {
  const { accounts } = await upstream.listAccounts({}, as);
  const wanted = [
    { name: 'Demo Store (USD)', currency: 'USD', time_zone: 'America/New_York' },
    { name: 'Demo Store (EUR)', currency: 'EUR', time_zone: 'Europe/Berlin' },
  ];
  for (const w of wanted.filter((w) => !accounts.some((a) => a.name === w.name))) {
    const res = await fetch(`${need('SANDBOX_URL')}/_sandbox/accounts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${need('SANDBOX_ADMIN_TOKEN')}`, 'content-type': 'application/json' },
      body: JSON.stringify(w),
    });
    if (!res.ok) throw new Error(`sandbox refused to create an account: ${res.status} ${await res.text()}`);
    const created = (await res.json()) as { account_id: string; credential: string };
    await upstream.createConnection(
      {
        name: w.name,
        currency: w.currency,
        timeZone: w.time_zone,
        canWrite: true,
        upstreamAccountId: created.account_id,
        upstreamCredential: created.credential,
      },
      as,
    );
  }
}

/** The token given when it is still a valid one of the demo workspace's, else a new one. */
async function demoToken(
  pool: Pool,
  workspaceId: string,
  existingToken: string | undefined,
): Promise<{ token: string; credentialId: string | undefined }> {
  let token = existingToken;
  let credentialId: string | undefined;
  if (token) {
    const row = await findCredentialByHash(pool, hashToken(token));
    const valid =
      row &&
      row.workspace_id === workspaceId &&
      row.revoked_at === null &&
      (row.expires_at === null || row.expires_at > new Date());
    if (valid) credentialId = row.credential_id;
    else token = undefined;
  }
  if (token === undefined) {
    const issued = await issueToken(pool, {
      workspace: workspaceId,
      scopes: ['read', 'write'],
      name: 'npm start (dev)',
      now: new Date(),
    });
    token = issued.token;
    credentialId = issued.credentialId;
  }
  return { token, credentialId };
}

/** set-envelope's options as the request: --micros a whole number of micros, or --none. */
async function setEnvelope(
  controls: Client<typeof ControlsService>,
  as: CallOptions,
  accountId: string,
  values: { micros?: string; none?: boolean; 'fail-closed'?: boolean },
) {
  if ((values.micros === undefined) === (values.none !== true))
    throw new Error('set-envelope needs either --micros <n> (the envelope) or --none (no envelope)');
  if (values.micros !== undefined && !/^\d{1,18}$/.test(values.micros))
    throw new Error(`--micros must be a whole number of micros, 0 or more (got "${values.micros}")`);
  const { controls: set } = await controls.setSpendEnvelope(
    {
      accountId,
      envelopeMicros: values.micros === undefined ? undefined : BigInt(values.micros),
      failClosed: values['fail-closed'] === true,
    },
    as,
  );
  const envelope = set?.envelope;
  return {
    account_id: accountId,
    envelope:
      envelope === undefined
        ? null
        : toJson(SpendEnvelopeSchema, envelope, { useProtoFieldName: true, alwaysEmitImplicit: true }),
  };
}

/** A freeze as the command prints it (snake_case, as the proto names its fields). */
function freezeJson(f: Freeze | undefined) {
  return f === undefined
    ? {}
    : (toJson(FreezeSchema, f, { useProtoFieldName: true, alwaysEmitImplicit: true }) as Record<
        string,
        unknown
      >);
}

/**
 * Verifies the audit chain of one workspace (or each): a line per workspace; throws (exit status
 * 1) when any is broken, after printing them all.
 */
async function verifyAudit(pool: Pool, given: string | undefined): Promise<void> {
  const workspaces =
    given === undefined
      ? (await pool.query<{ id: string; name: string }>('SELECT id, name FROM workspaces ORDER BY name, id'))
          .rows
      : [await chosenWorkspace(pool, given)];
  const signer = await createPrincipalSigner(need('PRINCIPAL_PRIVATE_KEY'));
  const audit = createServiceClient(AuditService, need('CHANGES_URL'), 'changes', signer);
  const broken: string[] = [];
  for (const ws of workspaces) {
    const v = await audit.verifyAuditChain(
      { whole: true },
      onBehalfOf({
        workspaceId: ws.id,
        credentialId: 'operator:verify-audit',
        userId: null,
        role: 'admin',
        scopes: ['read'],
        via: 'operator',
      }),
    );
    const where = `workspace ${JSON.stringify(ws.name)} (${ws.id})`;
    if (v.ok) {
      process.stdout.write(`audit chain verifies: ${v.rows} rows, ${where}\n`);
      continue;
    }
    const row = [v.brokenAt, v.brokenKind].filter(Boolean).join(', ');
    process.stdout.write(
      `audit chain broken at row ${v.brokenSeq}${row ? ` (${row})` : ''}, ${where}: ${v.reason}; the ${v.rows} rows before it verify\n`,
    );
    broken.push(ws.name);
  }
  if (broken.length > 0)
    throw new Error(`the audit chain of ${broken.map((n) => JSON.stringify(n)).join(', ')} does not verify`);
}

/** The options every command is parsed with; each command reads those it needs. */
function parseCommandArgs(rest: string[]) {
  return parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      workspace: { type: 'string' },
      user: { type: 'string' },
      scopes: { type: 'string', default: 'read,write' },
      'expires-in': { type: 'string', default: '90d' },
      name: { type: 'string' },
      tools: { type: 'string' },
      'admin-email': { type: 'string' },
      'admin-password': { type: 'string' },
      features: { type: 'string', default: '' },
      token: { type: 'string' },
      email: { type: 'string' },
      password: { type: 'string' },
      role: { type: 'string' },
      reason: { type: 'string' },
      yes: { type: 'boolean', default: false },
      'send-again': { type: 'boolean', default: false },
      applied: { type: 'boolean', default: false },
      'not-applied': { type: 'boolean', default: false },
      note: { type: 'string' },
      account: { type: 'string' },
      micros: { type: 'string' },
      none: { type: 'boolean', default: false },
      'fail-closed': { type: 'boolean', default: false },
    },
  });
}

/** What a command is given: the database, its own name, and the parsed command line. */
interface CommandInput {
  pool: Pool;
  command: string;
  values: ReturnType<typeof parseCommandArgs>['values'];
  positionals: string[];
}

async function createToken({ pool, values }: CommandInput): Promise<void> {
  const groups = issuedToolGroups(values.tools, '--tools');
  if (!groups.ok) throw new Error(groups.problem);
  const issued = await issueToken(pool, {
    ...(groups.ids === undefined ? {} : { toolGroups: groups.ids }),
    workspace: (await chosenWorkspace(pool, values.workspace)).id,
    userEmail: values.user,
    scopes: parseScopes(values.scopes),
    lifetimeMs: expiresIn(values['expires-in']),
    name: tokenName(values.name),
    now: new Date(),
  });
  process.stdout.write(
    `${JSON.stringify({ credential_id: issued.credentialId, token: issued.token, workspace_id: issued.workspaceId, user: issued.userEmail, scopes: issued.scopes, tool_groups: issued.toolGroups ?? null, expires_at: issued.expiresAt?.toISOString() ?? null }, null, 2)}\n`,
  );
  return;
}

async function revokeToken({ pool, command, positionals }: CommandInput): Promise<void> {
  const id = uuidArgument(positionals[0], command, 'credential');
  const at = await revokeCredential(pool, id);
  if (at === undefined) throw new Error(`no unrevoked credential ${id}`);
  process.stdout.write(`revoked ${id} at ${at.toISOString()}\n`);
  return;
}

async function listTokens({ pool, values }: CommandInput): Promise<void> {
  const rows = await listCredentials(pool, (await chosenWorkspace(pool, values.workspace)).id);
  const out = rows.map((r) => ({
    credential_id: r.credential_id,
    name: r.credential_name,
    user: r.user_email,
    scopes: r.scopes,
    tool_groups: r.tool_groups,
    created_at: r.created_at,
    expires_at: r.expires_at,
    revoked_at: r.revoked_at,
    last_used_at: r.last_used_at,
  }));
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  return;
}

async function createWorkspaceCommand({ pool, command, values }: CommandInput): Promise<void> {
  if (!values.name || !values['admin-email'] || !values['admin-password'])
    throw new Error('create-workspace needs --name, --admin-email and --admin-password');
  const features = values.features
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((f) => knownFeature(f, command));
  const name = await workspaceName(pool, values.name);
  const created = await createWorkspace(pool, {
    name,
    features,
    adminEmail: values['admin-email'],
    adminPassword: values['admin-password'],
  });
  process.stdout.write(
    `${JSON.stringify({ workspace_id: created.workspaceId, admin_user_id: created.userId })}\n`,
  );
  return;
}

async function addUserCommand({ pool, values }: CommandInput): Promise<void> {
  const role = values.role;
  if (role !== 'admin' && role !== 'editor' && role !== 'viewer')
    throw new Error('--role must be admin, editor or viewer');
  if (!values.workspace || !values.email || !values.password)
    throw new Error('add-user needs --workspace, --email and --password');
  const ws = await findWorkspace(pool, values.workspace);
  if (!ws) throw new Error(`no workspace "${values.workspace}"`);
  const id = await addUser(pool, {
    workspaceId: ws.id,
    email: values.email,
    password: values.password,
    role,
  });
  process.stdout.write(`${JSON.stringify({ user_id: id, workspace_id: ws.id, role })}\n`);
  return;
}

async function decideChange({ pool, command, values, positionals }: CommandInput): Promise<void> {
  const id = uuidArgument(positionals[0], command, 'change');
  const ws = await chosenWorkspace(pool, values.workspace);
  const user = values.user ? await findUserByEmail(pool, values.user) : await findFirstAdmin(pool, ws.id);
  if (!user || user.workspace_id !== ws.id) throw new Error('no such user in the workspace');
  const { signer, as } = await asOperator(user);
  const changes = createServiceClient(ChangesService, need('CHANGES_URL'), 'changes', signer);
  const { change } = await changes.getChange({ changeId: id }, as);
  if (!change) throw new Error(`no change ${id}`);
  if (command === 'approve') {
    if (statusWord(change) !== 'prepared')
      throw new Error(`change ${id} is ${statusWord(change)}; only a prepared change can be approved`);
    // Written before any question, so that it is read before anything is approved.
    process.stderr.write(`${reviewText(change)}\n`);
    if (!values.yes) {
      if (!process.stdin.isTTY)
        throw new Error(
          'approve asks for confirmation on a terminal and there is none; run it in a terminal, or add --yes to approve what is shown above without asking',
        );
      if (!(await confirmed(`Approve change ${id} as ${user.email}? [y/N] `)))
        throw new Error(`not approved; change ${id} is still prepared`);
    }
  }
  const decided =
    command === 'approve'
      ? await changes.approveChange({ changeId: id, digest: change.digest }, as)
      : await changes.rejectChange({ changeId: id, reason: values.reason ?? '' }, as);
  process.stdout.write(
    `${JSON.stringify({ change_id: id, status: decided.change && statusWord(decided.change), summary: change.summary, digest: change.digest, by: user.email })}\n`,
  );
  return;
}

async function changeOutcomes({ pool, command, values, positionals }: CommandInput): Promise<void> {
  const id = command === 'resolve' ? uuidArgument(positionals[0], command, 'change') : '';
  const resolution = command === 'resolve' ? resolutionOf(values) : '';
  const ws = await chosenWorkspace(pool, values.workspace);
  const user = values.user ? await findUserByEmail(pool, values.user) : await findFirstAdmin(pool, ws.id);
  if (!user || user.workspace_id !== ws.id) throw new Error('no such user in the workspace');
  const { signer, as } = await asOperator(user);
  const changes = createServiceClient(ChangesService, need('CHANGES_URL'), 'changes', signer);
  if (command === 'unknown-outcomes') {
    const found: Change[] = [];
    for (let offset: number | undefined = 0; offset !== undefined; ) {
      const res = await changes.listChanges({ accountId: '', outcomeUnknown: true, limit: 100, offset }, as);
      found.push(...res.changes);
      offset = res.nextOffset;
    }
    const out = found.map((c) => ({
      change_id: c.changeId,
      account_id: c.accountId,
      summary: c.summary,
      error: c.error ?? '',
      apply_requested_at: c.applyRequestedAt ?? '',
      apply_retried_at: c.applyRetriedAt ?? null,
    }));
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    return;
  }
  const { change } = await changes.resolveChange({ changeId: id, resolution, note: values.note ?? '' }, as);
  process.stdout.write(
    `${JSON.stringify({ change_id: id, resolution, status: change && statusWord(change), summary: change?.summary, note: change?.resolutionNote || null, by: user.email })}\n`,
  );
  return;
}

async function accountControls({ pool, command, values }: CommandInput): Promise<void> {
  const account = values.account === undefined ? '' : uuidArgument(values.account, command, 'account');
  if (account === '' && (command === 'set-envelope' || values.workspace === undefined))
    throw new Error(
      command === 'set-envelope'
        ? 'set-envelope needs --account <id>'
        : `${command} needs --account <id> (one ad account) or --workspace <id|name> (the whole workspace)`,
    );
  const ws = await chosenWorkspace(pool, values.workspace);
  const user = values.user ? await findUserByEmail(pool, values.user) : await findFirstAdmin(pool, ws.id);
  if (!user || user.workspace_id !== ws.id) throw new Error('no such user in the workspace');
  const { signer, as } = await asOperator(user);
  const controls = createServiceClient(ControlsService, need('CHANGES_URL'), 'changes', signer);
  let out: Record<string, unknown>;
  if (command === 'freeze') {
    const { freeze } = await controls.freeze({ accountId: account, reason: values.reason ?? '' }, as);
    out = { frozen: true, ...freezeJson(freeze), by: user.email };
  } else if (command === 'unfreeze') {
    const { freeze, resumed } = await controls.unfreeze({ accountId: account }, as);
    out = { frozen: false, ...freezeJson(freeze), resumed, by: user.email };
  } else {
    out = { ...(await setEnvelope(controls, as, account, values)), by: user.email };
  }
  process.stdout.write(`${JSON.stringify(out)}\n`);
  return;
}

async function setFeature({ pool, command, values, positionals }: CommandInput): Promise<void> {
  const feature = knownFeature(positionals[0], command);
  const ws = await chosenWorkspace(pool, values.workspace);
  const enable = command === 'enable-feature';
  if (feature === 'optimizer') {
    // The optimizer service schedules the reviews, so it hears first: when it cannot be
    // reached nothing has changed, and the command can simply be run again.
    const admin = await findFirstAdmin(pool, ws.id);
    if (admin === undefined) throw new Error(`workspace ${ws.name} has no admin`);
    await tellOptimizer(admin, enable);
  }
  const features = await (enable ? enableWorkspaceFeature : disableWorkspaceFeature)(pool, ws.id, feature);
  if (features === undefined) throw new Error(`no workspace "${values.workspace}"`);
  const changed = ws.features.includes(feature) !== enable;
  if (changed)
    await insertAudit(pool, {
      workspaceId: ws.id,
      actor: 'operator',
      action: enable ? 'workspace.feature_enabled' : 'workspace.feature_disabled',
      target: ws.id,
      detail: { feature },
    });
  process.stdout.write(
    `${JSON.stringify({ workspace_id: ws.id, workspace: ws.name, feature, enabled: enable, changed, features })}\n`,
  );
  return;
}

/** Each command by name: a table, so that a name not in it (also "toString") is an unknown command. */
const COMMANDS = new Map<string, (c: CommandInput) => Promise<void>>([
  ['create-token', createToken],
  ['revoke-token', revokeToken],
  ['list-tokens', listTokens],
  ['create-workspace', createWorkspaceCommand],
  ['add-user', addUserCommand],
  ['approve', decideChange],
  ['reject', decideChange],
  ['unknown-outcomes', changeOutcomes],
  ['resolve', changeOutcomes],
  ['freeze', accountControls],
  ['unfreeze', accountControls],
  ['set-envelope', accountControls],
  ['enable-feature', setFeature],
  ['disable-feature', setFeature],
  ['verify-audit', ({ pool, values }) => verifyAudit(pool, values.workspace)],
  [
    'seed-demo',
    async ({ pool, values }) => {
      process.stdout.write(`${JSON.stringify(await seedDemo(pool, values.token))}\n`);
    },
  ],
]);

/**
 * The commands that take an argument without an option name (a change or credential id, a
 * feature), one each; every other command takes none. A word more is refused, not ignored: with
 * `create-token Acme`, meaning `--workspace Acme`, the token would otherwise be made for the
 * default workspace.
 */
const POSITIONAL_ARGUMENT = new Map<string, string>([
  ['revoke-token', 'the credential id'],
  ['approve', 'the change id'],
  ['reject', 'the change id'],
  ['resolve', 'the change id'],
  ['enable-feature', 'the feature'],
  ['disable-feature', 'the feature'],
]);

/** The command was written wrongly (unknown, an unknown option, a word too many): exit code 2. */
class UsageError extends Error {}

/** The command's options and arguments, checked before anything is connected to or changed. */
function commandArgs(
  command: string,
  rest: string[],
): Pick<CommandInput, 'values' | 'positionals'> & { run: (c: CommandInput) => Promise<void> } {
  const run = COMMANDS.get(command);
  if (run === undefined) throw new UsageError(`unknown command "${command}"\n\n${USAGE}`);
  let parsed: ReturnType<typeof parseCommandArgs>;
  try {
    parsed = parseCommandArgs(rest);
  } catch (err) {
    throw new UsageError(`${command}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const takes = POSITIONAL_ARGUMENT.get(command);
  const extra = parsed.positionals[takes === undefined ? 0 : 1];
  if (extra !== undefined)
    throw new UsageError(
      `${command} takes ${takes === undefined ? 'no argument' : `one argument (${takes})`} without an option name; ` +
        `${JSON.stringify(extra)} is one too many (options are written --name value: see npm run admin -- help)`,
    );
  return { run, ...parsed };
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const { run, values, positionals } = commandArgs(command, rest);
  const pool = createPool(databaseUrl(), 'gateway', 2);
  try {
    await migrate(pool, 'gateway', fileURLToPath(new URL('../migrations', import.meta.url)));
    await run({ pool, command, values, positionals });
  } finally {
    await pool.end();
  }
}

/** What went wrong, in a line: a unique constraint (two commands racing) named by what already exists. */
function failure(err: unknown): string {
  const e = err as { code?: unknown; detail?: unknown; message?: unknown };
  if (e.code === '23505' && typeof e.detail === 'string') return `it already exists: ${e.detail}`;
  return err instanceof Error ? err.message : String(err);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`admin: ${failure(err)}\n`);
  process.exit(err instanceof UsageError ? 2 : 1);
});
