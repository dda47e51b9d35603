/**
 * Prepared changes. A prepare tool records the exact upstream operation with the changes
 * service, which reads the live object, checks the object the operation would produce and
 * returns a change_id; nothing reaches the ad account until a person approves the change in the
 * dashboard and ads_apply_change applies it, once, with exactly that payload.
 */
import {
  type ApplyChangeResponse,
  ChangeStatusSchema,
  ChangesService,
  type GetChangeResponse,
  type ListChangesResponse,
} from '@adsmcp/proto/changes/v1/changes_pb';
import { enumWords } from '@adsmcp/runtime/enum-words';
import type { GatewayDeps } from '../../deps.ts';
import type { ToolRow } from '../catalogue.ts';
import { appliedOrFailure, CHANGE_OUTPUT, changeView } from '../change-view.ts';
import { enumOf, integer, object, string } from '../schema.ts';
import { archiveAd, updateAd } from './ad-change-tools.ts';
import { accountId } from './platform-arguments.ts';

const UUID_RULE = { format: 'uuid' as const };

const DIGEST = string({
  min: 64,
  max: 64,
  pattern: /^[0-9a-f]{64}$/,
  patternHint: 'a SHA-256 digest in lowercase hex',
});
const applyInput = object({ change_id: string(UUID_RULE), digest: DIGEST }, ['change_id']);

const EXAMPLE_CHANGE = '5b1e2c3d-4f5a-4b6c-8d7e-9f0a1b2c3d4e';

/**
 * The dashboard page where a person reviews a change and approves or rejects it (as changeView's
 * review_url): it opens for the person signed in to the dashboard; it carries no credential and
 * grants nothing by itself.
 */
export function reviewUrl(publicUrl: string, changeId: string): string {
  return `${publicUrl}/dashboard/changes/${changeId}`;
}

/** How long ads_apply_change waits for the outcome of an apply it started. */
const APPLY_WAIT_MS = 5000;

/**
 * The change an ads_apply_change error result is about when it awaits a person's decision (it
 * is prepared, not yet approved), with its review page; undefined for every other result.
 */
export function awaitingPerson(result: {
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
}): { changeId: string; reviewUrl: string } | undefined {
  const error = result.isError ? result.structuredContent?.error : undefined;
  if (typeof error !== 'object' || error === null) return undefined;
  const e = error as Record<string, unknown>;
  return e.status === 'prepared' && typeof e.change_id === 'string' && typeof e.review_url === 'string'
    ? { changeId: e.change_id, reviewUrl: e.review_url }
    : undefined;
}

export const applyChange: ToolRow<GatewayDeps> = {
  name: 'ads_apply_change',
  title: 'Apply an approved change',
  group: 'Campaign creation',
  behavior: 'write',
  features: [],
  description:
    'Applies a change that a person approved, exactly as it was reviewed, once. Give the digest you reviewed to make ' +
    'sure it is that change. Refuses a change that is not approved, was rejected, failed or was already applied, ' +
    "or expired (nobody asked to apply it within the workspace's approval expiry, 24 hours by default: prepare it again), " +
    'but for a failed change whose outcome is unknown (it was sent and the platform never answered): within 24 hours ' +
    'of its first send, that one is sent again with the same idempotency key, so the platform applies it at most once (and not over an object ' +
    "that something else changed meanwhile). A refusal names the change's status and its review_url, the " +
    'dashboard page where a person approves or rejects it; a client that declared URL elicitation is asked to ' +
    'open that page instead, and its retry applies the change once the person approved it. ' +
    'Waits up to 5 seconds for the outcome; if it is still applying, ads_get_change shows it later. A change whose ' +
    'apply failed (a stale plan, the platform refused it) is an error result (code apply_failed) with the reason ' +
    'and the change.',
  input: applyInput,
  output: CHANGE_OUTPUT,
  destructive: true,
  openWorld: true,
  example: { change_id: EXAMPLE_CHANGE, digest: 'a'.repeat(64) },
  // The changes service names a refused change's status and change_id in the refusal's details,
  // and the tool error adds its review_url (tool-call.ts), as URL elicitation and tasks read it.
  route: {
    kind: 'rpc',
    method: ChangesService.method.applyChange,
    fixed: { wait_ms: APPLY_WAIT_MS },
    view: (res, { deps }) => appliedOrFailure((res as ApplyChangeResponse).change, deps.publicUrl),
  },
};

const getInput = object({ change_id: string(UUID_RULE) }, ['change_id']);

export const getChange: ToolRow<GatewayDeps> = {
  name: 'ads_get_change',
  title: 'Get a prepared change',
  group: 'Campaign creation',
  behavior: 'read',
  features: [],
  description:
    'Returns a change with its exact operation, digest and lifecycle: prepared, approved, expired (not approved, or not ' +
    "asked to apply, before expires_at), rejected, applying, applied or failed (with the ad platform's error).",
  input: getInput,
  output: CHANGE_OUTPUT,
  example: { change_id: EXAMPLE_CHANGE },
  route: {
    kind: 'rpc',
    method: ChangesService.method.getChange,
    view: (res, { deps }) => changeView((res as GetChangeResponse).change, deps.publicUrl),
  },
};

const listInput = object({
  // prepared and approved leave out the expired changes; expired lists them.
  status: enumOf(enumWords(ChangeStatusSchema)),
  account_id: accountId,
  limit: integer({ min: 1, max: 100 }),
  offset: integer({ min: 0, max: 100_000 }),
});

export const listChanges: ToolRow<GatewayDeps> = {
  name: 'ads_list_changes',
  title: 'List prepared changes',
  group: 'Campaign creation',
  behavior: 'read',
  features: [],
  description:
    "Lists the workspace's changes, newest first, optionally by status and account; offset pagination (limit 1 to 100, default 20). " +
    'A change nobody approved, or nobody asked to apply after its approval, in time is expired: status prepared ' +
    'and approved leave it out, status expired lists it.',
  input: listInput,
  output: {
    type: 'object',
    properties: {
      changes: { type: 'array', items: CHANGE_OUTPUT },
      total: { type: 'integer' },
      next_offset: { type: ['integer', 'null'] },
    },
    required: ['changes', 'total', 'next_offset'],
    additionalProperties: false,
  },
  example: { status: 'prepared', account_id: '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90', limit: 20, offset: 40 },
  route: {
    kind: 'rpc',
    method: ChangesService.method.listChanges,
    view: (res, { deps }) => {
      const r = res as ListChangesResponse;
      return {
        changes: r.changes.map((c) => changeView(c, deps.publicUrl)),
        total: r.total,
        next_offset: r.nextOffset ?? null,
      };
    },
  },
};

export const changeTools = [updateAd, archiveAd, applyChange, getChange, listChanges];
