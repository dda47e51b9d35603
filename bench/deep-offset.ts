/**
 * Benchmark: a deep page of the changes list (offset up to the tools' bound, 100,000) at 1,000
 * changes and at DEEP_LARGE (default 1,000,000) changes spread over a year, as a workspace that ran
 * an agent for a year has them. Two ways to read the page, timed in the same run on the same data:
 * - `plain`: the page statement before the day counts (migration 0019), which skips every match
 *   before the offset in the list index (`ORDER BY ... OFFSET`), with the kept-count total;
 * - `days`: listChanges as it is, which finds the day holding the offset in `change_day_counts`
 *   and skips only that day's earlier matches.
 * Each figure is the median of DEEP_CALLS sequential calls, the small and the large workspace
 * timed one after the other, so that the ratio (what counts on a shared machine) sees one load.
 * It also reads the proposals list's and the marketing items list's deep pages the same two ways,
 * at 1,000 and at a tenth of DEEP_LARGE, and the performance imports list's (its total counted and
 * every import before the offset skipped, against the counts kept per week of migration 0014) at
 * 1,000 and at a hundredth of DEEP_LARGE, an import an hour (as bench:scale).
 * It also times a status move (a single-row update) with the day-count trigger and without it,
 * and prints EXPLAIN (ANALYZE) of the day-count statements at the large size; a sequential scan
 * of a large table fails the run.
 *
 * `npm run bench:deep-offset`. Env: DEEP_LARGE (changes in the large workspace), DEEP_DAYS (the
 * days they are spread over, default 365), DEEP_ACCOUNTS (default 5), DEEP_CALLS (default 21),
 * DEEP_ONLY (some of changes, proposals, items, imports, comma-separated; default all).
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { Queryable } from '@adsmcp/runtime/db';
import { createPool, migrate, type Pool } from '@adsmcp/runtime/db';
import { stopTestServer, testDatabase } from '@adsmcp/testkit/postgres';
import { countChanges, listChanges } from '../services/changes/src/store/change-store.ts';
import type { Kind } from '../services/marketing/src/domain/item-data.ts';
import { listImports } from '../services/marketing/src/store/import-store.ts';
import { listItems } from '../services/marketing/src/store/item-store.ts';
import { listProposals } from '../services/optimizer/src/store/review-store.ts';
import { envInt, median } from './bench-kit.ts';

const SMALL = 1_000;
const LARGE = envInt('DEEP_LARGE', 1_000_000, 10_000, 5_000_000);
const DAYS = envInt('DEEP_DAYS', 365, 1, 3650);
const CALLS = envInt('DEEP_CALLS', 21, 3, 1000);
const ACCOUNTS = envInt('DEEP_ACCOUNTS', 5, 1, 1000);
const WARMUP = 3;
const LIMIT = 20;
/** The tools' offset bound (their schema's `offset` maximum). */
const MAX_OFFSET = 100_000;
const MOVES = 300;
const PARTS = ['changes', 'proposals', 'items', 'imports'] as const;
const ONLY = new Set(
  (process.env.DEEP_ONLY ?? PARTS.join(','))
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== ''),
);
for (const p of ONLY)
  if (!(PARTS as readonly string[]).includes(p))
    throw new Error(`DEEP_ONLY: ${p} is not one of ${PARTS.join(', ')}`);
const expiry = { preparedValidHours: 72, approvalValidHours: 24 };

interface Workspace {
  id: string;
  size: number;
  accounts: string[];
}

/**
 * Seeds `size` changes, the newest a day ago, evenly over DAYS days, in the statuses a year of use
 * leaves (as bench/scale.ts: most applied, some rejected, failed or left to expire), over
 * DEEP_ACCOUNTS accounts, each with every status; in statements of 100,000 rows, each moving the
 * kept counts once per key.
 */
async function seed(pool: Pool, w: Workspace): Promise<void> {
  const step = (DAYS * 86_400) / w.size;
  for (let from = 0; from < w.size; from += 100_000)
    await pool.query(
      `INSERT INTO changes (change_id, workspace_id, account_id, tool, status, summary, method, path, body_json,
                            digest, target_path, target_before_json, prepared_by, prepared_at, approved_at,
                            applied_at, upstream_status)
       SELECT gen_random_uuid(), $1, ($2::uuid[])[1 + (i / 10) % cardinality($2::uuid[])], 'ads_update_ad', st,
              'Benchmark change ' || i, 'POST', '/v1/ads/' || i, '{"headline":"Benchmark"}',
              encode(sha256(i::text::bytea), 'hex'), '/v1/ads/' || i, '{}', 'user:bench via dashboard', at,
              CASE WHEN st IN ('applied', 'failed', 'approved') THEN at + interval '1 minute' END,
              CASE WHEN st = 'applied' THEN at + interval '3 minutes' END,
              CASE WHEN st = 'applied' THEN 200 WHEN st = 'failed' THEN 400 END
         FROM generate_series($3::int + 1, $4::int) AS i,
              LATERAL (SELECT now() - interval '1 day' - i * make_interval(secs => $5::float8) AS at,
                              (ARRAY['applied','applied','applied','applied','applied','applied','rejected','failed','prepared','approved'])[1 + i % 10] AS st) s`,
      [w.id, w.accounts, from, Math.min(w.size, from + 100_000), step],
    );
}

interface Read {
  label: string;
  filter: { status?: string; accountId?: string };
  /** How many changes of the workspace the filter matches. */
  matches(w: Workspace): number;
}

const reads: Read[] = [
  { label: 'no filter', filter: {}, matches: (w) => w.size },
  { label: 'status applied', filter: { status: 'applied' }, matches: (w) => Math.floor((w.size * 6) / 10) },
  {
    label: 'one account',
    filter: { accountId: 'first' },
    matches: (w) => Math.floor(w.size / w.accounts.length),
  },
  // Prepared and approved changes past their window: a fifth of the seed, less the prepared ones
  // of the last 72 hours (under 1% of it over a year).
  { label: 'status expired', filter: { status: 'expired' }, matches: (w) => Math.floor((w.size * 19) / 100) },
];

const deepOffset = (matches: number) => Math.min(MAX_OFFSET, Math.max(0, matches - LIMIT));

function filterOf(r: Read, w: Workspace): { status?: string; accountId?: string } {
  return { ...r.filter, accountId: r.filter.accountId === undefined ? undefined : w.accounts[0] };
}

/**
 * The page as listChanges read it before the day counts: every earlier match skipped (expired, as
 * its SHOWN_STATUS has it: prepared or approved past the window).
 */
async function plainPage(db: Queryable, w: Workspace, r: Read): Promise<number> {
  const f = filterOf(r, w);
  const status =
    f.status === 'expired'
      ? `$2 = 'expired' AND ((c.status = 'prepared' AND c.prepared_at <= $6::timestamptz - make_interval(hours => $7::int))
          OR (c.status = 'approved' AND c.approved_at <= $6::timestamptz - make_interval(hours => $8::int)))`
      : '($2::text IS NULL OR c.status = $2) AND $6::timestamptz IS NOT NULL AND $7::int IS NOT NULL AND $8::int IS NOT NULL';
  const [{ rows }] = await Promise.all([
    db.query(
      `SELECT c.* FROM (
         SELECT c.change_id, c.prepared_at FROM changes c
          WHERE c.workspace_id = $1 AND ${status} AND ($3::uuid IS NULL OR c.account_id = $3::uuid)
          ORDER BY c.prepared_at DESC, c.change_id LIMIT $4 OFFSET $5
       ) page JOIN changes c ON c.change_id = page.change_id
       ORDER BY page.prepared_at DESC, page.change_id`,
      [
        w.id,
        f.status ?? null,
        f.accountId ?? null,
        LIMIT,
        deepOffset(r.matches(w)),
        new Date(),
        expiry.preparedValidHours,
        expiry.approvalValidHours,
      ],
    ),
    countChanges(db, { workspaceId: w.id, ...f, expiry, now: new Date() }),
  ]);
  return rows.length;
}

async function dayPage(db: Queryable, w: Workspace, r: Read): Promise<number> {
  const { rows } = await listChanges(db, {
    workspaceId: w.id,
    ...filterOf(r, w),
    expiry,
    now: new Date(),
    limit: LIMIT,
    offset: deepOffset(r.matches(w)),
  });
  return rows.length;
}

async function time(call: () => Promise<number>): Promise<number> {
  for (let i = 0; i < WARMUP; i++) await call();
  const times: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const at = performance.now();
    const got = await call();
    times.push(performance.now() - at);
    if (got !== LIMIT) throw new Error(`a deep page held ${got} changes, not ${LIMIT}`);
  }
  return median(times);
}

/** Median ms of a status move of one change (a single-row update that moves its counts). */
async function timeMoves(pool: Pool, w: Workspace): Promise<number> {
  const { rows } = await pool.query<{ change_id: string }>(
    `SELECT change_id FROM changes WHERE workspace_id = $1 AND status = 'rejected' ORDER BY prepared_at DESC LIMIT $2`,
    [w.id, MOVES],
  );
  const times: number[] = [];
  for (const [i, { change_id }] of rows.entries()) {
    const at = performance.now();
    await pool.query('UPDATE changes SET status = $2 WHERE change_id = $1', [
      change_id,
      i % 2 === 0 ? 'failed' : 'rejected',
    ]);
    times.push(performance.now() - at);
  }
  return median(times);
}

/** The header of a deep-page table: the read, the way, the offsets and the two sizes. */
function writeHeader(small: number, large: number): void {
  process.stdout.write(
    `${'read'.padEnd(18)}${'way'.padEnd(7)}${'offset'.padStart(16)}${String(small).padStart(10)}${String(large).padStart(10)}   ratio\n`,
  );
}

/** One row of a deep-page table: median ms at each size and their ratio. */
function writeRow(label: string, way: string, offsets: string, s: number, l: number): void {
  process.stdout.write(
    `${label.padEnd(18)}${way.padEnd(7)}${offsets.padStart(16)}${s.toFixed(2).padStart(10)}${l.toFixed(2).padStart(10)}   ${(l / s).toFixed(2)}x${l / s > 1.5 ? '  over 1.5x' : ''}\n`,
  );
}

/** A pool on a service's schema, its migrations applied. */
async function migratedPool(url: string, service: 'changes' | 'optimizer' | 'marketing'): Promise<Pool> {
  const pool = createPool(url, service, 4);
  try {
    await migrate(
      pool,
      service,
      fileURLToPath(new URL(`../services/${service}/migrations`, import.meta.url)),
    );
    return pool;
  } catch (err) {
    await pool.end();
    throw err;
  }
}

/**
 * Runs `read` through a recorder, explains (ANALYZE) the statement it sent that reads `counts`,
 * prints its plan nodes as `label`, and says whether it scans a large table sequentially.
 */
async function explainRead(
  db: Pool,
  label: string,
  counts: string,
  read: (recorder: Queryable) => Promise<unknown>,
): Promise<boolean> {
  const sent: { text: string; values: unknown[] }[] = [];
  const recorder: Queryable = {
    query: ((text: string, values: unknown[]) => {
      sent.push({ text, values });
      return db.query(text, values);
    }) as Queryable['query'],
  };
  await read(recorder);
  const statement = sent.find((st) => st.text.includes(counts));
  if (statement === undefined) throw new Error(`${label}: the read did not use ${counts}`);
  const { rows } = await db.query<{
    'QUERY PLAN': [{ Plan: Record<string, unknown>; 'Execution Time': number }];
  }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${statement.text}`, statement.values);
  const explained = rows[0]?.['QUERY PLAN'][0];
  if (explained === undefined) throw new Error(`${label}: no plan`);
  const nodes = planNodes(explained.Plan);
  const seq = (await largeSeqScans(db, nodes)).length > 0;
  process.stdout.write(
    `  ${label} (${explained['Execution Time'].toFixed(2)} ms): ${nodes.join(' > ')}${seq ? '  SEQUENTIAL SCAN' : ''}\n`,
  );
  return seq;
}

/**
 * The tables of more than SMALL rows (by the planner's statistics) that plan nodes (planNodes) scan
 * sequentially: as bench:scale, a small table's (a few workspaces' kept counts) sequential scan is
 * the planner's cheapest way to read it, and does not grow with the history.
 */
async function largeSeqScans(db: Queryable, nodes: string[]): Promise<string[]> {
  const scanned = nodes.flatMap((n) => /^Seq Scan \(([^,)]+)/.exec(n)?.[1] ?? []);
  if (scanned.length === 0) return [];
  const { rows } = await db.query<{ relname: string }>(
    `SELECT relname FROM pg_class WHERE relname = ANY($1::text[]) AND relkind = 'r' AND reltuples > $2`,
    [scanned, SMALL],
  );
  return rows.map((r) => r.relname);
}

/** Every plan node of an EXPLAIN (FORMAT JSON), as `Node (relation or index)`, depth first. */
function planNodes(plan: Record<string, unknown>, out: string[] = []): string[] {
  const on = plan['Index Name'] ?? plan['Relation Name'];
  const scan = String(plan['Node Type']).includes('Scan') && on !== undefined;
  out.push(
    `${String(plan['Node Type'])}${on === undefined ? '' : ` (${String(on)}${scan ? `, ${String(plan['Actual Rows'])} rows` : ''})`}`,
  );
  for (const child of (plan.Plans as Record<string, unknown>[] | undefined) ?? []) planNodes(child, out);
  return out;
}

/** A workspace's optimizers (each on its own account, with one run) and how many proposals it has. */
interface ProposalWorkspace {
  id: string;
  size: number;
  optimizers: string[];
}

/**
 * Seeds `w.size` proposals evenly over DAYS days, the newest a day ago, over three optimizers, in
 * the statuses a year of reviews leaves (most published).
 */
async function seedProposals(opt: Pool, w: ProposalWorkspace): Promise<void> {
  for (const optimizerId of w.optimizers) {
    const accountId = randomUUID();
    await opt.query(
      `INSERT INTO optimizers (optimizer_id, workspace_id, account_id, name, config, enabled, paused_at, revision, created_at, updated_at)
       VALUES ($1, $2, $3, 'Optimizer', '{}', false, now(), 1, now(), now())`,
      [optimizerId, w.id, accountId],
    );
    await opt.query(
      `INSERT INTO review_runs (run_id, workspace_id, optimizer_id, account_id, status, trigger, requested_by, outcome,
                                summary, completed_at, created_at, updated_at)
       VALUES ($1, $2, $1, $3, 'completed', 'request', 'agent', 'proposals', 'Run', now(), now(), now())`,
      [optimizerId, w.id, accountId],
    );
  }
  await opt.query(
    `INSERT INTO proposals (proposal_id, workspace_id, optimizer_id, account_id, run_id, position, status, revision,
                            variant, created_at, updated_at)
     SELECT gen_random_uuid(), $1, o.optimizer_id, o.account_id, o.optimizer_id, i, st, 1, '{}', at, at
       FROM generate_series(1, $3::int) AS i,
            LATERAL (SELECT now() - interval '1 day' - i * make_interval(secs => $4::float8) AS at,
                            (ARRAY['published','published','published','published','rejected','cancelled','failed',
                                   'expired','changes_requested','published'])[1 + (i / 3) % 10] AS st) s,
            LATERAL (SELECT optimizer_id, account_id FROM optimizers
                      WHERE optimizer_id = ($2::uuid[])[1 + i % cardinality($2::uuid[])]) o`,
    [w.id, w.optimizers, w.size, (DAYS * 86_400) / w.size],
  );
}

/** The proposals page as listProposals read it before the day counts: every earlier match skipped. */
async function plainProposals(
  opt: Queryable,
  w: ProposalWorkspace,
  optimizerId: string | undefined,
  status?: 'expired',
): Promise<number> {
  const { rows } = await opt.query(
    `SELECT p.* FROM (
       SELECT proposal_id, created_at, position FROM proposals
        WHERE workspace_id = $1 AND ($2::uuid IS NULL OR optimizer_id = $2::uuid)
          AND ($5::text IS NULL OR
               (CASE WHEN status = 'pending_review' AND review_expires_at <= $6 THEN 'expired'
                     WHEN status = 'approved' AND publish_by <= $6 THEN 'expired'
                     ELSE status END) = $5)
        ORDER BY created_at DESC, position, proposal_id LIMIT $3 OFFSET $4
     ) page JOIN proposals p ON p.proposal_id = page.proposal_id
     ORDER BY page.created_at DESC, page.position, page.proposal_id`,
    [w.id, optimizerId ?? null, LIMIT, proposalOffset(w, optimizerId, status), status ?? null, new Date()],
  );
  return rows.length;
}

async function dayProposals(
  opt: Queryable,
  w: ProposalWorkspace,
  optimizerId: string | undefined,
  status?: 'expired',
): Promise<number> {
  const rows = await listProposals(opt, {
    workspaceId: w.id,
    optimizerId,
    status,
    now: new Date(),
    limit: LIMIT,
    offset: proposalOffset(w, optimizerId, status),
  });
  return rows.length;
}

/** The deep offset of a proposals read; about a tenth of the seed is expired (less a margin). */
const proposalOffset = (w: ProposalWorkspace, optimizerId: string | undefined, status?: 'expired') =>
  deepOffset(
    Math.floor(
      (optimizerId === undefined ? w.size : w.size / w.optimizers.length) / (status === undefined ? 1 : 11),
    ),
  );

async function main(): Promise<void> {
  const db = await testDatabase();
  const pool = createPool(db.url, 'changes', 4);
  let failed = false;
  try {
    await migrate(pool, 'changes', fileURLToPath(new URL('../services/changes/migrations', import.meta.url)));
    if (ONLY.has('changes')) {
      const small: Workspace = {
        id: randomUUID(),
        size: SMALL,
        accounts: Array.from({ length: ACCOUNTS }, () => randomUUID()),
      };
      const large: Workspace = {
        id: randomUUID(),
        size: LARGE,
        accounts: Array.from({ length: ACCOUNTS }, () => randomUUID()),
      };
      const started = performance.now();
      await seed(pool, small);
      await seed(pool, large);
      // As autovacuum would have by then: statistics and the visibility map.
      await pool.query('VACUUM ANALYZE changes');
      await pool.query('VACUUM ANALYZE change_day_counts');
      const { rows: kept } = await pool.query<{ n: string }>(
        'SELECT count(*)::text AS n FROM change_day_counts',
      );
      process.stdout.write(
        `seeded ${SMALL} and ${LARGE} changes over ${DAYS} days and ${ACCOUNTS} accounts (${kept[0]?.n} day-count rows) in ${((performance.now() - started) / 1000).toFixed(1)} s\n\n`,
      );

      process.stdout.write(
        `deep page of ${LIMIT} (offset: the matches less ${LIMIT}, at most ${MAX_OFFSET}), median ms of ${CALLS} calls\n`,
      );
      writeHeader(SMALL, LARGE);
      for (const r of reads)
        for (const [way, page] of [
          ['plain', plainPage],
          ['days', dayPage],
        ] as const) {
          const s = await time(() => page(pool, small, r));
          const l = await time(() => page(pool, large, r));
          writeRow(r.label, way, `${deepOffset(r.matches(small))} / ${deepOffset(r.matches(large))}`, s, l);
        }

      await pool.query('ALTER TABLE changes DISABLE TRIGGER change_day_counts_update');
      const without = await timeMoves(pool, large);
      await pool.query('ALTER TABLE changes ENABLE TRIGGER change_day_counts_update');
      const withDays = await timeMoves(pool, large);
      process.stdout.write(
        `\nstatus move (one-row update), median ms of ${MOVES}: without the day-count trigger ${without.toFixed(2)}, with it ${withDays.toFixed(2)} (${(withDays / without).toFixed(2)}x)\n`,
      );

      process.stdout.write(`\nplans at ${LARGE} (EXPLAIN ANALYZE of listChanges's page statement)\n`);
      for (const r of reads) {
        if (await explainRead(pool, r.label, 'change_day_counts', (q) => dayPage(q, large, r))) failed = true;
      }
    }
    if (ONLY.has('proposals'))
      await proposals(db.url, (plan) => {
        failed ||= plan;
      });
    if (ONLY.has('items'))
      await items(db.url, (plan) => {
        failed ||= plan;
      });
    if (ONLY.has('imports'))
      await imports(db.url, (plan) => {
        failed ||= plan;
      });
  } finally {
    await pool.end();
    await db.drop();
    await stopTestServer();
  }
  if (failed) {
    process.stdout.write('a plan scans a table sequentially\n');
    process.exitCode = 1;
  }
}

/** The proposals list's deep pages, at SMALL and at a tenth of DEEP_LARGE (as bench:scale). */
async function proposals(url: string, sequentialScan: (seen: boolean) => void): Promise<void> {
  const opt = await migratedPool(url, 'optimizer');
  try {
    const fresh = (size: number): ProposalWorkspace => ({
      id: randomUUID(),
      size,
      optimizers: [randomUUID(), randomUUID(), randomUUID()],
    });
    const small = fresh(SMALL);
    const large = fresh(Math.round(LARGE / 10));
    await seedProposals(opt, small);
    await seedProposals(opt, large);
    await opt.query('VACUUM ANALYZE proposals');
    await opt.query('VACUUM ANALYZE proposal_day_counts');
    process.stdout.write(
      `\nproposals: ${small.size} and ${large.size} over ${DAYS} days and 3 optimizers; deep page of ${LIMIT}, median ms of ${CALLS} calls\n`,
    );
    writeHeader(small.size, large.size);
    for (const [label, one, status] of [
      ['no filter', false, undefined],
      ['one optimizer', true, undefined],
      ['status expired', false, 'expired'],
    ] as const)
      for (const [way, page] of [
        ['plain', plainProposals],
        ['days', dayProposals],
      ] as const) {
        const s = await time(() => page(opt, small, one ? small.optimizers[0] : undefined, status));
        const l = await time(() => page(opt, large, one ? large.optimizers[0] : undefined, status));
        const offsets = `${proposalOffset(small, one ? '' : undefined, status)} / ${proposalOffset(large, one ? '' : undefined, status)}`;
        writeRow(label, way, offsets, s, l);
      }
    for (const [one, status] of [
      [false, undefined],
      [true, undefined],
      [false, 'expired'],
    ] as const) {
      sequentialScan(
        await explainRead(
          opt,
          `proposals, ${status === 'expired' ? 'status expired' : one ? 'one optimizer' : 'no filter'}`,
          'proposal_day_counts',
          (q) => dayProposals(q, large, one ? large.optimizers[0] : undefined, status),
        ),
      );
    }
  } finally {
    await opt.end();
  }
}

/** A marketing items list filter of the bench: none, a kind, a tag. */
type ItemFilter = { kind?: Kind; tag?: string };
const ITEM_READS: [string, ItemFilter][] = [
  ['no filter', {}],
  ['kind brief', { kind: 'brief' }],
  ['tag sale', { tag: 'sale' }],
];

/**
 * Seeds `size` live items, last saved evenly over DAYS days, the newest a day ago, in three kinds,
 * three collections and a tag or two (or none).
 */
async function seedItems(mk: Pool, workspaceId: string, size: number): Promise<void> {
  await mk.query(
    `INSERT INTO marketing_items (workspace_id, item_id, kind, name, collection, tags, data, revision, created_at, updated_at)
     SELECT $1, gen_random_uuid(), (ARRAY['brief','creative','inspiration'])[1 + i % 3], 'Benchmark item ' || i,
            (ARRAY['','spring','summer'])[1 + (i / 3) % 3],
            CASE (i / 9) % 4 WHEN 0 THEN ARRAY['sale'] WHEN 1 THEN ARRAY['video'] WHEN 2 THEN ARRAY['sale', 'video'] ELSE '{}' END,
            '{"text":"Benchmark"}', 1, at, at
       FROM generate_series(1, $2::int) AS i,
            LATERAL (SELECT now() - interval '1 day' - i * make_interval(secs => $3::float8) AS at) s`,
    [workspaceId, size, (DAYS * 86_400) / size],
  );
}

/** The items page as listItems read it before the day counts: every earlier match skipped. */
async function plainItems(
  mk: Queryable,
  workspaceId: string,
  f: ItemFilter,
  offset: number,
): Promise<number> {
  const { rows } = await mk.query<{ item_id: string | null }>(
    `SELECT counted.total, page.*
       FROM (SELECT coalesce(sum(n), 0)::bigint AS total FROM ${f.tag === undefined ? 'marketing_item_counts' : 'marketing_item_tag_counts'}
              WHERE workspace_id = $1${f.tag === undefined ? '' : ' AND tag = $3'} AND ($2::text IS NULL OR kind = $2)) AS counted
       LEFT JOIN LATERAL (
         SELECT marketing_items.*
           FROM (SELECT item_id AS page_id, updated_at AS page_at FROM marketing_items
                  WHERE workspace_id = $1 AND archived_at IS NULL AND ($2::text IS NULL OR kind = $2)
                    AND ($3::text IS NULL OR tags @> ARRAY[$3::text])
                  ORDER BY updated_at DESC, item_id DESC LIMIT $4 OFFSET $5) AS ids
           JOIN marketing_items ON marketing_items.workspace_id = $1 AND marketing_items.item_id = ids.page_id
          ORDER BY ids.page_at DESC, ids.page_id DESC
       ) AS page ON true`,
    [workspaceId, f.kind ?? null, f.tag ?? null, LIMIT, offset],
  );
  return rows.filter((r) => r.item_id != null).length;
}

async function dayItems(mk: Queryable, workspaceId: string, f: ItemFilter, offset: number): Promise<number> {
  const { items } = await listItems(mk, workspaceId, { ...f, limit: LIMIT, offset });
  return items.length;
}

/** Median ms of a save of one item's name on a later day than its last (the update moves its day counts). */
async function timeItemSaves(mk: Pool, workspaceId: string): Promise<number> {
  const { rows } = await mk.query<{ item_id: string }>(
    `SELECT item_id FROM marketing_items WHERE workspace_id = $1 AND archived_at IS NULL
      ORDER BY updated_at LIMIT $2`,
    [workspaceId, MOVES],
  );
  const times: number[] = [];
  for (const { item_id } of rows) {
    const at = performance.now();
    await mk.query(
      `UPDATE marketing_items SET name = 'Saved', updated_at = now(), revision = revision + 1
        WHERE workspace_id = $1 AND item_id = $2`,
      [workspaceId, item_id],
    );
    times.push(performance.now() - at);
  }
  return median(times);
}

/** The marketing items list's deep pages, at SMALL and at a tenth of DEEP_LARGE (as bench:scale). */
async function items(url: string, sequentialScan: (seen: boolean) => void): Promise<void> {
  const mk = await migratedPool(url, 'marketing');
  try {
    const small = { id: randomUUID(), size: SMALL };
    const large = { id: randomUUID(), size: Math.round(LARGE / 10) };
    await seedItems(mk, small.id, small.size);
    await seedItems(mk, large.id, large.size);
    await mk.query('VACUUM ANALYZE marketing_items');
    await mk.query('VACUUM ANALYZE marketing_item_day_counts');
    const matches = async (w: { id: string }, f: ItemFilter) =>
      (await listItems(mk, w.id, { ...f, limit: 1, offset: 0 })).total;
    process.stdout.write(
      `\nmarketing items: ${small.size} and ${large.size} over ${DAYS} days; deep page of ${LIMIT}, median ms of ${CALLS} calls\n`,
    );
    writeHeader(small.size, large.size);
    for (const [label, f] of ITEM_READS) {
      const so = deepOffset(await matches(small, f));
      const lo = deepOffset(await matches(large, f));
      for (const [way, page] of [
        ['plain', plainItems],
        ['days', dayItems],
      ] as const) {
        const s = await time(() => page(mk, small.id, f, so));
        const l = await time(() => page(mk, large.id, f, lo));
        writeRow(label, way, `${so} / ${lo}`, s, l);
      }
    }
    for (const [label, f] of ITEM_READS) {
      const offset = deepOffset(await matches(large, f));
      sequentialScan(
        await explainRead(mk, `items, ${label}`, 'marketing_item_day_counts', (q) =>
          dayItems(q, large.id, f, offset),
        ),
      );
    }
    await mk.query('ALTER TABLE marketing_items DISABLE TRIGGER marketing_item_day_counts_update');
    const without = await timeItemSaves(mk, large.id);
    await mk.query('ALTER TABLE marketing_items ENABLE TRIGGER marketing_item_day_counts_update');
    const withDays = await timeItemSaves(mk, large.id);
    process.stdout.write(
      `\nitem save on a later day (one-row update), median ms of ${MOVES}: without the day-count trigger ${without.toFixed(2)}, with it ${withDays.toFixed(2)} (${(withDays / without).toFixed(2)}x)\n`,
    );
  } finally {
    await mk.end();
  }
}

/** The performance imports list's page as it was read before the week counts: every import counted, every one before the offset skipped. */
async function plainImports(mk: Queryable, workspaceId: string, offset: number): Promise<number> {
  const { rows } = await mk.query<{ import_id: string | null }>(
    `SELECT counted.total, page.*
       FROM (SELECT count(*) AS total FROM performance_imports WHERE workspace_id = $1) AS counted
       LEFT JOIN LATERAL (
         SELECT performance_imports.*
           FROM (SELECT import_id AS page_id, created_at AS page_at FROM performance_imports
                  WHERE workspace_id = $1 ORDER BY created_at DESC, import_id DESC OFFSET $2 LIMIT $3) AS ids
           JOIN performance_imports ON performance_imports.workspace_id = $1 AND performance_imports.import_id = ids.page_id
          ORDER BY ids.page_at DESC, ids.page_id DESC
       ) AS page ON true`,
    [workspaceId, offset, LIMIT],
  );
  return rows.filter((r) => r.import_id != null).length;
}

async function weekImports(mk: Queryable, workspaceId: string, offset: number): Promise<number> {
  return (await listImports(mk, workspaceId, offset, LIMIT)).imports.length;
}

/** Seeds `size` completed imports, one an hour, the newest a day ago (as bench:scale). */
async function seedImports(mk: Pool, workspaceId: string, size: number): Promise<void> {
  await mk.query(
    `INSERT INTO performance_imports (workspace_id, import_id, source, name, currency, timezone, attribution,
       since, until, format, content_hash, status, row_count, rows_saved, ad_count, created_by, created_at,
       started_at, finished_at)
     SELECT $1::uuid, gen_random_uuid(), 'other', 'Benchmark import ' || i, 'USD', 'UTC', 'last click', date '2026-01-01',
            date '2026-01-31', 'rows', encode(sha256(($1::text || i)::bytea), 'hex'), 'completed', 5000, 5000, 50,
            'user:bench via dashboard', at, at, at + interval '5 seconds'
       FROM generate_series(1, $2::int) AS i,
            LATERAL (SELECT now() - interval '1 day' - i * interval '1 hour' AS at) s`,
    [workspaceId, size],
  );
}

/** The performance imports list's first and deep pages, at SMALL and at a hundredth of DEEP_LARGE (as bench:scale). */
async function imports(url: string, sequentialScan: (seen: boolean) => void): Promise<void> {
  const mk = await migratedPool(url, 'marketing');
  try {
    const small = { id: randomUUID(), size: SMALL };
    const large = { id: randomUUID(), size: Math.max(SMALL, Math.round(LARGE / 100)) };
    await seedImports(mk, small.id, small.size);
    await seedImports(mk, large.id, large.size);
    await mk.query('VACUUM ANALYZE performance_imports');
    await mk.query('VACUUM ANALYZE performance_import_week_counts');
    process.stdout.write(
      `\nperformance imports: ${small.size} and ${large.size}, one an hour; page of ${LIMIT}, median ms of ${CALLS} calls\n`,
    );
    writeHeader(small.size, large.size);
    for (const [label, at] of [
      ['first', () => 0],
      ['deep', deepOffset],
    ] as const) {
      const so = at(small.size);
      const lo = at(large.size);
      for (const [way, page] of [
        ['plain', plainImports],
        ['weeks', weekImports],
      ] as const) {
        const s = await time(() => page(mk, small.id, so));
        const l = await time(() => page(mk, large.id, lo));
        writeRow(label, way, `${so} / ${lo}`, s, l);
      }
    }
    for (const [label, offset] of [
      ['first', 0],
      ['deep', deepOffset(large.size)],
    ] as const) {
      sequentialScan(
        await explainRead(mk, `imports, ${label}`, 'performance_import_week_counts', (q) =>
          weekImports(q, large.id, offset),
        ),
      );
    }
  } finally {
    await mk.end();
  }
}

await main();
