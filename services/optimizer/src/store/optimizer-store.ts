/** The optimizers table. Every query names the workspace, so one workspace never reaches another's rows. */
import type { Queryable } from '@adsmcp/runtime/db';
import type { Goal, Optimizer, OptimizerConfig } from '../domain/optimizer.ts';

/** The configuration as stored: the spec's field names, optional fields absent when unset. */
interface ConfigJson {
  campaign_ids: string[];
  goal: Goal;
  conversion_goal_id?: string;
  target?: number;
  cadence_hours: number;
  window_hours: number;
  reporting_delay_hours: number;
  min_impressions: number;
  min_clicks: number;
  min_conversions: number;
  max_ads_per_campaign: number;
  review_hours: number;
  publish_hours: number;
  brand_instructions?: string;
  allowed_domains: string[];
}

interface OptimizerRow {
  optimizer_id: string;
  workspace_id: string;
  account_id: string;
  name: string;
  config: ConfigJson;
  enabled: boolean;
  paused_at: Date | null;
  next_review_at: Date | null;
  revision: number;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS =
  'optimizer_id, workspace_id, account_id, name, config, enabled, paused_at, next_review_at, revision, created_at, updated_at';

/** Newest first; the id breaks ties so that pages never overlap or skip. */
const NEWEST_FIRST = 'ORDER BY created_at DESC, optimizer_id DESC';

function toJson(c: OptimizerConfig): ConfigJson {
  return {
    campaign_ids: c.campaignIds,
    goal: c.goal,
    ...(c.conversionGoalId !== undefined && { conversion_goal_id: c.conversionGoalId }),
    ...(c.target !== undefined && { target: c.target }),
    cadence_hours: c.cadenceHours,
    window_hours: c.windowHours,
    reporting_delay_hours: c.reportingDelayHours,
    min_impressions: c.minImpressions,
    min_clicks: c.minClicks,
    min_conversions: c.minConversions,
    max_ads_per_campaign: c.maxAdsPerCampaign,
    review_hours: c.reviewHours,
    publish_hours: c.publishHours,
    ...(c.brandInstructions !== undefined && { brand_instructions: c.brandInstructions }),
    allowed_domains: c.allowedDomains,
  };
}

function fromJson(j: ConfigJson): OptimizerConfig {
  return {
    campaignIds: j.campaign_ids,
    goal: j.goal,
    ...(j.conversion_goal_id !== undefined && { conversionGoalId: j.conversion_goal_id }),
    ...(j.target !== undefined && { target: j.target }),
    cadenceHours: j.cadence_hours,
    windowHours: j.window_hours,
    reportingDelayHours: j.reporting_delay_hours,
    minImpressions: j.min_impressions,
    minClicks: j.min_clicks,
    minConversions: j.min_conversions,
    maxAdsPerCampaign: j.max_ads_per_campaign,
    reviewHours: j.review_hours,
    publishHours: j.publish_hours,
    ...(j.brand_instructions !== undefined && { brandInstructions: j.brand_instructions }),
    allowedDomains: j.allowed_domains,
  };
}

const toOptimizer = (r: OptimizerRow): Optimizer => ({
  optimizerId: r.optimizer_id,
  workspaceId: r.workspace_id,
  accountId: r.account_id,
  name: r.name,
  config: fromJson(r.config),
  enabled: r.enabled,
  pausedAt: r.paused_at,
  nextReviewAt: r.next_review_at,
  revision: r.revision,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** insertOptimizer stores a new optimizer. */
export async function insertOptimizer(db: Queryable, o: Optimizer): Promise<Optimizer> {
  const { rows } = await db.query<OptimizerRow>(
    `INSERT INTO optimizers (${COLUMNS})
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
     RETURNING ${COLUMNS}`,
    [
      o.optimizerId,
      o.workspaceId,
      o.accountId,
      o.name,
      JSON.stringify(toJson(o.config)),
      o.enabled,
      o.pausedAt,
      o.nextReviewAt,
      o.revision,
      o.createdAt,
      o.updatedAt,
    ],
  );
  const row = rows[0];
  if (row === undefined) throw new Error('INSERT ... RETURNING returned no row');
  return toOptimizer(row);
}

/** getOptimizer returns one optimizer of the workspace, or undefined. */
export async function getOptimizer(
  db: Queryable,
  workspaceId: string,
  optimizerId: string,
): Promise<Optimizer | undefined> {
  const { rows } = await db.query<OptimizerRow>(
    `SELECT ${COLUMNS} FROM optimizers WHERE workspace_id = $1 AND optimizer_id = $2`,
    [workspaceId, optimizerId],
  );
  const row = rows[0];
  return row === undefined ? undefined : toOptimizer(row);
}

/**
 * lockOptimizer returns one optimizer of the workspace, or undefined, locking its row until
 * the transaction `db` runs in ends, so that a read-check-write cannot interleave with another
 * (`share`: against a change of the optimizer only, such as a pause).
 */
export async function lockOptimizer(
  db: Queryable,
  workspaceId: string,
  optimizerId: string,
  mode: 'update' | 'share' = 'update',
): Promise<Optimizer | undefined> {
  const { rows } = await db.query<OptimizerRow>(
    `SELECT ${COLUMNS} FROM optimizers WHERE workspace_id = $1 AND optimizer_id = $2 FOR ${mode === 'share' ? 'SHARE' : 'UPDATE'}`,
    [workspaceId, optimizerId],
  );
  const row = rows[0];
  return row === undefined ? undefined : toOptimizer(row);
}

/**
 * updateOptimizer writes every changeable field of `o` over the stored row of its workspace
 * whose revision is `fromRevision`; it returns undefined when there is no such row.
 */
export async function updateOptimizer(
  db: Queryable,
  o: Optimizer,
  fromRevision: number,
): Promise<Optimizer | undefined> {
  const { rows } = await db.query<OptimizerRow>(
    `UPDATE optimizers
        SET name = $4, config = $5, enabled = $6, paused_at = $7, next_review_at = $8,
            revision = $9, updated_at = $10
      WHERE workspace_id = $1 AND optimizer_id = $2 AND revision = $3
      RETURNING ${COLUMNS}`,
    [
      o.workspaceId,
      o.optimizerId,
      fromRevision,
      o.name,
      JSON.stringify(toJson(o.config)),
      o.enabled,
      o.pausedAt,
      o.nextReviewAt,
      o.revision,
      o.updatedAt,
    ],
  );
  const row = rows[0];
  return row === undefined ? undefined : toOptimizer(row);
}

export interface ListFilter {
  workspaceId: string;
  accountId?: string | undefined;
  limit: number;
  offset: number;
}

/** listOptimizers returns one page of the workspace's optimizers (of one account, if given), newest first. */
export async function listOptimizers(db: Queryable, f: ListFilter): Promise<Optimizer[]> {
  const { rows } = await db.query<OptimizerRow>(
    `SELECT ${COLUMNS} FROM optimizers
      WHERE workspace_id = $1 AND ($2::uuid IS NULL OR account_id = $2::uuid)
      ${NEWEST_FIRST}
      LIMIT $3 OFFSET $4`,
    [f.workspaceId, f.accountId ?? null, f.limit, f.offset],
  );
  return rows.map(toOptimizer);
}

/** countOptimizers counts the workspace's optimizers (of one account, if given). */
export async function countOptimizers(
  db: Queryable,
  workspaceId: string,
  accountId: string | undefined,
): Promise<number> {
  const { rows } = await db.query<{ total: number }>(
    `SELECT count(*)::int AS total FROM optimizers
      WHERE workspace_id = $1 AND ($2::uuid IS NULL OR account_id = $2::uuid)`,
    [workspaceId, accountId ?? null],
  );
  return rows[0]?.total ?? 0;
}
