/**
 * The business_outcome_imports and business_outcomes tables. Every query names the workspace. An
 * outcome already saved under the same source and external_id is a duplicate: skipped when its
 * fingerprint is the same, a conflict (the whole import fails) when it differs.
 */
import type { Queryable } from '@adsmcp/runtime/db';
import { FailedPreconditionError, InvalidArgumentError } from '@adsmcp/runtime/errors';
import {
  describeIds,
  type Outcome,
  type OutcomeImportRequest,
  type OutcomeKind,
  type RefundRuleOutcome,
  refundProblems,
} from '../domain/business-outcomes.ts';

export interface OutcomeImportRecord {
  import_id: string;
  account_id: string;
  source: string;
  name: string;
  currency: string;
  attribution: string;
  received: number;
  saved: number;
  skipped_duplicates: number;
  created_at: Date;
}

async function insertOutcomeImport(
  db: Queryable,
  workspaceId: string,
  importId: string,
  r: OutcomeImportRequest,
  createdBy: string,
): Promise<void> {
  await db.query(
    `INSERT INTO business_outcome_imports (workspace_id, import_id, account_id, source, name, currency,
       attribution, received, saved, skipped_duplicates, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, 0, $9)`,
    [workspaceId, importId, r.accountId, r.source, r.name, r.currency, r.attribution, r.received, createdBy],
  );
}

/** Inserts the outcomes not saved yet; returns the external ids it inserted. */
async function insertNewOutcomes(
  db: Queryable,
  workspaceId: string,
  importId: string,
  r: OutcomeImportRequest,
): Promise<Set<string>> {
  const o = r.outcomes;
  const { rows } = await db.query<{ external_id: string }>(
    `INSERT INTO business_outcomes (workspace_id, source, external_id, import_id, account_id, currency, kind,
       occurred_at, occurred_at_text, ad_id, value, quantity, campaign_id, ad_group_id, refund_of, fingerprint)
     SELECT $1, $2, u.external_id, $3, $4, $5, u.kind, u.occurred_at, u.occurred_at_text, u.ad_id, u.value,
            u.quantity, u.campaign_id, u.ad_group_id, u.refund_of, u.fingerprint
       FROM unnest($6::text[], $7::text[], $8::timestamptz[], $9::text[], $10::numeric[], $11::int[],
                   $12::text[], $13::text[], $14::text[], $15::text[], $16::text[])
            AS u(external_id, kind, occurred_at, ad_id, value, quantity, campaign_id, ad_group_id, refund_of,
                 fingerprint, occurred_at_text)
     ON CONFLICT (workspace_id, source, external_id) DO NOTHING
     RETURNING external_id`,
    [
      workspaceId,
      r.source,
      importId,
      r.accountId,
      r.currency,
      o.map((x) => x.externalId),
      o.map((x) => x.kind),
      o.map((x) => x.occurredAt),
      o.map((x) => x.adId),
      o.map((x) => x.value),
      o.map((x) => x.quantity),
      o.map((x) => x.campaignId),
      o.map((x) => x.adGroupId),
      o.map((x) => x.refundOf),
      o.map((x) => x.fingerprint),
      o.map((x) => x.occurredAtText),
    ],
  );
  return new Set(rows.map((row) => row.external_id));
}

/** A saved outcome's fingerprint, and whether it was saved before instants kept more than milliseconds. */
interface SavedFingerprint {
  fingerprint: string;
  legacy: boolean;
}

/** The saved fingerprints of `externalIds` of a source. */
async function savedFingerprints(
  db: Queryable,
  workspaceId: string,
  source: string,
  externalIds: string[],
): Promise<Map<string, SavedFingerprint>> {
  const { rows } = await db.query<{ external_id: string; fingerprint: string; legacy: boolean }>(
    `SELECT external_id, fingerprint, occurred_at_text IS NULL AS legacy FROM business_outcomes
      WHERE workspace_id = $1 AND source = $2 AND external_id = ANY($3::text[])`,
    [workspaceId, source, externalIds],
  );
  return new Map(rows.map((row) => [row.external_id, { fingerprint: row.fingerprint, legacy: row.legacy }]));
}

/** Whether `x` is an exact repeat of the saved outcome `saved` (the same content). */
function isRepeat(x: Outcome, saved: SavedFingerprint | undefined): boolean {
  if (saved === undefined) return false;
  // An outcome saved before kept its instant to the millisecond only: compare it so.
  return saved.fingerprint === (saved.legacy ? x.legacyFingerprint : x.fingerprint);
}

/**
 * Holds the workspace's source for the rest of the transaction (an advisory lock), before anything
 * is inserted: imports of one source are saved one after the other. Two that touch one order (one
 * refunding it, one bringing the order itself or another refund) are then checked in turn, the
 * second seeing what the first saved, and two that bring the same ids in different orders wait
 * instead of deadlocking on the rows they insert. One lock, not one per id: an import of 5,000
 * rows and their refunds would otherwise take up to 10,000, more than PostgreSQL's shared lock
 * table holds by default (64 a connection).
 */
async function lockSource(db: Queryable, workspaceId: string, source: string): Promise<void> {
  await db.query(
    `SELECT pg_advisory_xact_lock(hashtextextended('business outcomes ' || $1 || ' ' || $2, 0))`,
    [workspaceId, source],
  );
}

/** The saved outcomes of a source that `ids` name, and the refunds that name them (held: lockSource). */
async function refundGroups(
  db: Queryable,
  workspaceId: string,
  source: string,
  importId: string,
  ids: string[],
): Promise<RefundRuleOutcome[]> {
  const { rows } = await db.query<{
    external_id: string;
    account_id: string;
    currency: string;
    kind: OutcomeKind;
    value: string | null;
    refund_of: string | null;
    earlier: boolean;
  }>(
    `SELECT external_id, account_id, currency, kind, value::text AS value, refund_of, import_id <> $3 AS earlier
       FROM business_outcomes
      WHERE workspace_id = $1 AND source = $2
        AND (external_id = ANY($4::text[]) OR refund_of = ANY($4::text[]))`,
    [workspaceId, source, importId, ids],
  );
  return rows.map((r) => ({
    externalId: r.external_id,
    accountId: r.account_id,
    currency: r.currency,
    kind: r.kind,
    value: r.value,
    refundOf: r.refund_of,
    earlier: r.earlier,
  }));
}

/**
 * checkRefunds refuses the import when a refund it saved, or one saved before that names an
 * outcome it saved, breaks a refund rule (refundProblems): within the import an invalid argument,
 * with an outcome of an earlier import a failed precondition.
 */
async function checkRefunds(
  db: Queryable,
  workspaceId: string,
  importId: string,
  r: OutcomeImportRequest,
  inserted: Set<string>,
): Promise<void> {
  const added = r.outcomes.filter((x) => inserted.has(x.externalId));
  const ids = [
    ...new Set(added.flatMap((x) => (x.refundOf === null ? [x.externalId] : [x.externalId, x.refundOf]))),
  ];
  if (ids.length === 0) return;
  const problems = refundProblems(await refundGroups(db, workspaceId, r.source, importId, ids));
  if (problems.length === 0) return;
  const shown = problems.slice(0, 10).map((p) => p.message);
  const more = problems.length > shown.length ? `; and ${problems.length - shown.length} more` : '';
  const message = `${shown.join('; ')}${more}; nothing was imported`;
  throw problems.some((p) => p.earlier)
    ? new FailedPreconditionError(message)
    : new InvalidArgumentError(message);
}

async function finishOutcomeImport(
  db: Queryable,
  workspaceId: string,
  importId: string,
  saved: number,
  skipped: number,
): Promise<OutcomeImportRecord> {
  const { rows } = await db.query<OutcomeImportRecord>(
    `UPDATE business_outcome_imports SET saved = $3, skipped_duplicates = $4
      WHERE workspace_id = $1 AND import_id = $2
      RETURNING import_id, account_id, source, name, currency, attribution, received, saved, skipped_duplicates, created_at`,
    [workspaceId, importId, saved, skipped],
  );
  const row = rows[0];
  if (row === undefined) throw new Error(`business outcome import ${importId} vanished`);
  return row;
}

/**
 * saveOutcomes records the import and its new outcomes; run it in a transaction: a conflict with
 * a saved outcome, or a refund that breaks a refund rule, throws, and then nothing of the import
 * is kept.
 */
export async function saveOutcomes(
  db: Queryable,
  o: { workspaceId: string; importId: string; request: OutcomeImportRequest; createdBy: string },
): Promise<OutcomeImportRecord> {
  const { workspaceId, importId, request: r } = o;
  await insertOutcomeImport(db, workspaceId, importId, r, o.createdBy);
  await lockSource(db, workspaceId, r.source);
  const inserted = await insertNewOutcomes(db, workspaceId, importId, r);
  const repeats = r.outcomes.filter((x) => !inserted.has(x.externalId));
  const saved = await savedFingerprints(
    db,
    workspaceId,
    r.source,
    repeats.map((x) => x.externalId),
  );
  const conflicts = repeats.filter((x) => !isRepeat(x, saved.get(x.externalId))).map((x) => x.externalId);
  if (conflicts.length > 0) {
    throw new FailedPreconditionError(
      `external_id ${describeIds(conflicts)} of source ${r.source} ${conflicts.length === 1 ? 'was' : 'were'} imported before with different content; nothing was imported`,
    );
  }
  await checkRefunds(db, workspaceId, importId, r, inserted);
  return finishOutcomeImport(db, workspaceId, importId, inserted.size, r.skippedInRequest + repeats.length);
}
