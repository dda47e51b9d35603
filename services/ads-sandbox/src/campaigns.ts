/**
 * Campaigns: the resource, its JSON form, and the rules of a campaign create body (campaigns are
 * created only through bulk mutation jobs). Pure functions; the store persists campaigns.
 */
import { isRecord } from '@adsmcp/runtime/json';
import { oneOf, refuseUnknownProperties, string } from './ad-requests.ts';
import { invalidRequest } from './errors.ts';

export const CAMPAIGN_STATUSES = ['active', 'paused', 'archived'] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];

export const CAMPAIGN_OBJECTIVES = ['clicks', 'impressions', 'conversions'] as const;
export type CampaignObjective = (typeof CAMPAIGN_OBJECTIVES)[number];

export const BUDGET_TYPES = ['daily', 'lifetime'] as const;
export type BudgetType = (typeof BUDGET_TYPES)[number];

/** The smallest budget: one unit of the account's currency. */
export const MIN_BUDGET_MICROS = 1_000_000;
/** The largest budget: a billion units, well inside exact JSON integers. */
export const MAX_BUDGET_MICROS = 1_000_000_000_000_000;

export interface Campaign {
  /** Creation sequence: the list order, and what cursors point at. Not part of the JSON. */
  seq: number;
  id: string;
  accountId: string;
  name: string;
  status: CampaignStatus;
  objective: CampaignObjective;
  budgetMicros: number;
  budgetType: BudgetType;
  startTime: Date | null;
  endTime: Date | null;
  revision: number;
  createdAt: Date;
  updatedAt: Date;
}

/** A validated campaign create body. */
export interface CampaignCreate {
  name: string;
  objective: CampaignObjective;
  budgetMicros: number;
  budgetType: BudgetType;
  startTime: Date | null;
  endTime: Date | null;
}

/** campaignJson is a campaign as the API returns it; budgets are in the account's `currency`. */
export function campaignJson(c: Campaign, currency: string) {
  return {
    id: c.id,
    account_id: c.accountId,
    name: c.name,
    status: c.status,
    objective: c.objective,
    budget_micros: c.budgetMicros,
    budget_type: c.budgetType,
    currency,
    start_time: c.startTime === null ? null : c.startTime.toISOString(),
    end_time: c.endTime === null ? null : c.endTime.toISOString(),
    revision: c.revision,
    created_at: c.createdAt.toISOString(),
    updated_at: c.updatedAt.toISOString(),
  };
}

export type CampaignJson = ReturnType<typeof campaignJson>;

/** RFC 3339 date-time with an explicit offset, as the platform's other times are written. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

/** dateTime parses an RFC 3339 date-time with an offset (`2026-12-01T00:00:00Z`). */
export function dateTime(value: unknown, field: string): Date {
  const ms = typeof value === 'string' && DATE_TIME.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw invalidRequest(
      field,
      `${field} must be an RFC 3339 date-time with an offset, such as 2026-12-01T00:00:00Z`,
    );
  }
  return new Date(ms);
}

/** integer checks a JSON integer within [min, max]. */
export function integer(value: unknown, field: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw invalidRequest(field, `${field} must be an integer from ${min} to ${max}`);
  }
  return value;
}

/** required returns `obj[key]`, refusing its absence. */
export function required(obj: Record<string, unknown>, key: string, path = ''): unknown {
  const field = path === '' ? key : `${path}.${key}`;
  if (obj[key] === undefined) throw invalidRequest(field, `${field} is required`);
  return obj[key];
}

/**
 * pausedOnly refuses a status other than `paused` in a bulk create body: objects a bulk job
 * creates start paused, so nothing spends before a person has looked at it.
 */
export function pausedOnly(value: unknown): void {
  if (value !== undefined && value !== 'paused') {
    throw invalidRequest('status', 'status must be "paused": bulk jobs create paused objects only');
  }
}

const CREATE_KEYS = ['name', 'objective', 'budget_micros', 'budget_type', 'start_time', 'end_time', 'status'];

/**
 * parseCampaignCreate validates a campaign create body. A lifetime budget needs an end time (it is
 * spread over the run), and the end comes after the start.
 */
export function parseCampaignCreate(body: unknown): CampaignCreate {
  if (!isRecord(body)) throw invalidRequest(undefined, 'the body must be a JSON object');
  refuseUnknownProperties(body, CREATE_KEYS, '');
  const name = string(required(body, 'name'), 'name', { min: 3, max: 1000, content: true });
  const objective = oneOf(required(body, 'objective'), 'objective', CAMPAIGN_OBJECTIVES);
  const budgetMicros = integer(
    required(body, 'budget_micros'),
    'budget_micros',
    MIN_BUDGET_MICROS,
    MAX_BUDGET_MICROS,
  );
  const budgetType = oneOf(required(body, 'budget_type'), 'budget_type', BUDGET_TYPES);
  const startTime = body.start_time === undefined ? null : dateTime(body.start_time, 'start_time');
  const endTime = body.end_time === undefined ? null : dateTime(body.end_time, 'end_time');
  pausedOnly(body.status);
  if (startTime !== null && endTime !== null && endTime <= startTime) {
    throw invalidRequest('end_time', 'end_time must be after start_time');
  }
  if (budgetType === 'lifetime' && endTime === null) {
    throw invalidRequest('end_time', 'end_time is required with a lifetime budget');
  }
  return { name, objective, budgetMicros, budgetType, startTime, endTime };
}
