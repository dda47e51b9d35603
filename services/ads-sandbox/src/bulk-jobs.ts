/**
 * Bulk mutation jobs: a list of create operations (campaigns, ad groups, ads, all paused) that
 * the platform accepts at once and reports on as it works through them. The sandbox applies a
 * job's operations when it accepts the job (all or nothing, unless `partial_failure`), then
 * reveals the outcome over time: the job is `queued` for QUEUED_MS, `running` while it
 * processes one operation per OPERATION_MS, then `succeeded` (at least one operation applied)
 * or `failed` (none was). The progress is a function of the creation time and the clock alone.
 */
import { isRecord } from '@adsmcp/runtime/json';
import { oneOf, refuseUnknownProperties } from './ad-requests.ts';
import { invalidRequest } from './errors.ts';

export const QUEUED_MS = 2000;
export const OPERATION_MS = 100;
/** A workbook of three sheets of 1000 rows compiles to at most this many operations. */
export const MAX_OPERATIONS = 3000;

export const OPERATION_TYPES = ['create_campaign', 'create_ad_group', 'create_ad'] as const;
export type OperationType = (typeof OPERATION_TYPES)[number];

/** A body field that may point at the object an earlier operation of the job creates. */
export const REF_FIELDS: Partial<Record<OperationType, { field: string; target: OperationType }>> = {
  create_ad_group: { field: 'campaign_id', target: 'create_campaign' },
  create_ad: { field: 'ad_group_id', target: 'create_ad_group' },
};
/** `"campaign_id": "ref:spring"` names the campaign created by the operation with `"ref": "spring"`. */
export const REF_PREFIX = 'ref:';
const REF_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

export interface Operation {
  type: OperationType;
  ref: string | undefined;
  body: Record<string, unknown>;
}

export interface BulkRequest {
  operations: Operation[];
  validateOnly: boolean;
  partialFailure: boolean;
}

export interface ItemError {
  code: string;
  message: string;
  field?: string;
}

/** The outcome of one operation: applied (with the new object's id), refused, or not applied. */
export interface ItemResult {
  status: 'succeeded' | 'failed' | 'skipped';
  id?: string;
  error?: ItemError;
}

export interface BulkJob {
  id: string;
  accountId: string;
  partialFailure: boolean;
  operations: Operation[];
  results: ItemResult[];
  createdAt: Date;
}

function flag(value: unknown, field: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw invalidRequest(field, `${field} must be true or false`);
  return value;
}

function parseOperation(value: unknown, i: number, refs: Map<string, OperationType>): Operation {
  const path = `operations.${i}`;
  if (!isRecord(value)) throw invalidRequest(path, `${path} must be an object`);
  refuseUnknownProperties(value, ['type', 'ref', 'body'], path);
  const type = oneOf(value.type, `${path}.type`, OPERATION_TYPES);
  let ref: string | undefined;
  if (value.ref !== undefined) {
    if (typeof value.ref !== 'string' || !REF_PATTERN.test(value.ref)) {
      throw invalidRequest(`${path}.ref`, `${path}.ref must be 1 to 64 letters, digits, "_" or "-"`);
    }
    if (refs.has(value.ref)) throw invalidRequest(`${path}.ref`, `${path}.ref "${value.ref}" is used twice`);
    ref = value.ref;
  }
  if (!isRecord(value.body)) throw invalidRequest(`${path}.body`, `${path}.body must be an object`);
  const refField = REF_FIELDS[type];
  const pointer = refField === undefined ? undefined : value.body[refField.field];
  if (refField !== undefined && typeof pointer === 'string' && pointer.startsWith(REF_PREFIX)) {
    const name = pointer.slice(REF_PREFIX.length);
    const field = `${path}.body.${refField.field}`;
    if (refs.get(name) !== refField.target) {
      throw invalidRequest(
        field,
        `${field} "${pointer}" must name the ref of an earlier ${refField.target} operation of this job`,
      );
    }
  }
  if (ref !== undefined) refs.set(ref, type);
  return { type, ref, body: value.body };
}

/**
 * parseBulkRequest validates the shape of a bulk job request: its operations, their refs and
 * flags. The operations' bodies are checked when the job runs, each as its own endpoint would.
 */
export function parseBulkRequest(body: unknown): BulkRequest {
  if (!isRecord(body)) throw invalidRequest(undefined, 'the body must be a JSON object');
  refuseUnknownProperties(body, ['operations', 'validate_only', 'partial_failure'], '');
  const ops = body.operations;
  if (!Array.isArray(ops)) throw invalidRequest('operations', 'operations must be an array');
  if (ops.length < 1 || ops.length > MAX_OPERATIONS) {
    throw invalidRequest('operations', `operations must have 1 to ${MAX_OPERATIONS} items`);
  }
  const refs = new Map<string, OperationType>();
  return {
    operations: ops.map((op, i) => parseOperation(op, i, refs)),
    validateOnly: flag(body.validate_only, 'validate_only'),
    partialFailure: flag(body.partial_failure, 'partial_failure'),
  };
}

/** The status of a job at `now`, and how many of its operations it has processed. */
export function progress(job: BulkJob, now: number) {
  const n = job.operations.length;
  const created = job.createdAt.getTime();
  const started = created + QUEUED_MS;
  const completed = started + n * OPERATION_MS;
  const processed = now < started ? 0 : Math.min(n, Math.floor((now - started) / OPERATION_MS));
  const anyApplied = job.results.some((r) => r.status === 'succeeded');
  const status = now < started ? 'queued' : now < completed ? 'running' : anyApplied ? 'succeeded' : 'failed';
  return {
    status,
    processed,
    startedAt: now < started ? null : new Date(started),
    completedAt: now < completed ? null : new Date(completed),
  };
}

/** One operation's entry in a job's results; `pending` until the job has processed it. */
export interface ItemJson extends Partial<Omit<ItemResult, 'status'>> {
  index: number;
  type: OperationType;
  ref: string | null;
  status: ItemResult['status'] | 'pending';
}

function itemJson(op: Operation, index: number, result: ItemResult | undefined): ItemJson {
  return { index, type: op.type, ref: op.ref ?? null, ...(result ?? { status: 'pending' }) };
}

/** bulkJobJson is a job as the API returns it at `now`: results only for processed operations. */
export function bulkJobJson(job: BulkJob, now: number) {
  const p = progress(job, now);
  const visible = job.results.slice(0, p.processed);
  return {
    id: job.id,
    account_id: job.accountId,
    status: p.status,
    partial_failure: job.partialFailure,
    operation_count: job.operations.length,
    processed_count: p.processed,
    succeeded_count: visible.filter((r) => r.status === 'succeeded').length,
    failed_count: visible.filter((r) => r.status === 'failed').length,
    created_at: job.createdAt.toISOString(),
    started_at: p.startedAt === null ? null : p.startedAt.toISOString(),
    completed_at: p.completedAt === null ? null : p.completedAt.toISOString(),
    results: job.operations.map((op, i) => itemJson(op, i, i < p.processed ? job.results[i] : undefined)),
  };
}

export type BulkJobJson = ReturnType<typeof bulkJobJson>;

/** validationJson is the answer to a `validate_only` request: what a job would do, applying nothing. */
export function validationJson(operations: Operation[], results: ItemResult[]) {
  return {
    validate_only: true,
    valid: results.every((r) => r.status !== 'failed'),
    operation_count: operations.length,
    results: operations.map((op, i) => {
      const error = results[i]?.error;
      return {
        index: i,
        type: op.type,
        ref: op.ref ?? null,
        status: error === undefined ? ('valid' as const) : ('invalid' as const),
        ...(error === undefined ? {} : { error }),
      };
    }),
  };
}
