import type { Queryable } from '@adsmcp/runtime/db';
import type {
  BudgetType,
  Campaign,
  CampaignCreate,
  CampaignObjective,
  CampaignStatus,
} from '../campaigns.ts';
import type { PageOf, PageRequest } from '../paging.ts';
import { pageBySeq } from './seq-page.ts';

interface CampaignRow {
  seq: number;
  id: string;
  account_id: string;
  name: string;
  status: CampaignStatus;
  objective: CampaignObjective;
  budget_micros: number;
  budget_type: BudgetType;
  start_time: Date | null;
  end_time: Date | null;
  revision: number;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS =
  'seq, id, account_id, name, status, objective, budget_micros, budget_type, start_time, end_time, revision, created_at, updated_at';

const toCampaign = (r: CampaignRow): Campaign => ({
  seq: r.seq,
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  status: r.status,
  objective: r.objective,
  budgetMicros: r.budget_micros,
  budgetType: r.budget_type,
  startTime: r.start_time,
  endTime: r.end_time,
  revision: r.revision,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** insertCampaign creates a campaign of `accountId` and returns it as stored. */
export async function insertCampaign(
  db: Queryable,
  c: CampaignCreate & { id: string; accountId: string; status: CampaignStatus },
): Promise<Campaign> {
  const { rows } = await db.query<CampaignRow>(
    `INSERT INTO campaigns (id, account_id, name, status, objective, budget_micros, budget_type, start_time, end_time)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     RETURNING ${COLUMNS}`,
    [c.id, c.accountId, c.name, c.status, c.objective, c.budgetMicros, c.budgetType, c.startTime, c.endTime],
  );
  return toCampaign(rows[0] as CampaignRow);
}

/**
 * findCampaign returns the campaign `id` of `accountId` (undefined when there is none, or it is
 * another account's). `forShare` keeps it from changing until the calling transaction ends.
 */
export async function findCampaign(
  db: Queryable,
  accountId: string,
  id: string,
  opts: { forShare?: boolean } = {},
): Promise<Campaign | undefined> {
  const { rows } = await db.query<CampaignRow>(
    `SELECT ${COLUMNS} FROM campaigns WHERE account_id = $1 AND id = $2${opts.forShare ? ' FOR SHARE' : ''}`,
    [accountId, id],
  );
  const row = rows[0];
  return row === undefined ? undefined : toCampaign(row);
}

/** pageCampaigns returns one page of an account's campaigns in creation order, optionally of one status. */
export async function pageCampaigns(
  db: Queryable,
  f: { accountId: string; status: CampaignStatus | undefined },
  q: PageRequest,
): Promise<PageOf<Campaign>> {
  const page = await pageBySeq<CampaignRow>(
    db,
    {
      select: COLUMNS,
      from: 'campaigns',
      where: 'account_id = $1 AND ($2::text IS NULL OR status = $2)',
      params: [f.accountId, f.status ?? null],
      seq: 'seq',
    },
    q,
  );
  return { ...page, items: page.items.map(toCampaign) };
}
