/**
 * Prepared changes. A prepare tool records the exact upstream operation with the changes
 * service, which reads the live object, checks the object the operation would produce and
 * returns a change_id; nothing reaches the ad account until a person approves the change in the
 * dashboard and ads_apply_change applies it, once, with exactly that payload.
 */
import {
  type ApplyChangeResponse,
  ChangesService,
  type GetChangeResponse,
  type ListChangesResponse,
} from '@adsmcp/proto/changes/v1/changes_pb';
import type { GatewayDeps } from '../../deps.ts';
import type { ToolRow } from '../catalogue.ts';
import { appliedOrFailure, CHANGE_OUTPUT, changeView } from '../change-view.ts';
import { enumOf, integer, nullable, number, object, string } from '../schema.ts';
import { accountId, platformId } from './platform-arguments.ts';

const UUID_RULE = { format: 'uuid' as const };
const OBJECT_ID = platformId();

/** The rules of an ad creative's fields, shared by every tool that takes a creative. */
export const creativeFields = {
  type: enumOf(['chat_card', 'product_ad_template']),
  title: string({ min: 1, max: 50, nonBlank: true }),
  body: string({ max: 100 }),
  price: string({ max: 100 }),
  target_url: string({ max: 2048, format: 'http-uri' }),
  file_id: string({ min: 1, max: 255 }),
  image_crop: object(
    {
      x: number({ min: 0, max: 1 }),
      y: number({ min: 0, max: 1 }),
      width: number({ min: 0, max: 1 }),
      height: number({ min: 0, max: 1 }),
    },
    ['x', 'y', 'width', 'height'],
    'A square crop of the EXIF-oriented source image, as fractions of its width and height: square in pixels, so ' +
      'width × image width equals height × image height (on a 300 × 100 image, width 1/3 and height 1); chat_card ' +
      'only; needs an image (file_id, or asset_id where a tool takes one).',
  ),
};

const creative = object({
  ...creativeFields,
  file_id: string({
    min: 1,
    max: 255,
    description:
      'An image file the ad account has (as an ad’s creative.file_id shows it); one it does not have is refused.',
  }),
  asset_id: string({
    format: 'uuid',
    description:
      'A saved campaign image of this ad account (ads_save_campaign_asset) instead of file_id: pinned when the ' +
      'change is prepared, shown to the reviewer, and uploaded to the ad platform only when the approved change is ' +
      'applied, then sent as its file_id. Not with file_id.',
  }),
});

const adUpdateBody = object(
  {
    name: string({ min: 3, max: 1000, nonBlank: true }),
    creative,
    status: enumOf(['active', 'paused', 'archived']),
    landing_page_configuration: nullable(
      object({ query_string_template: string({ max: 2048 }) }, ['query_string_template']),
    ),
  },
  [],
  'The fields to change; fields left out keep their value.',
);

const updateAdInput = object({ account_id: accountId, ad_id: OBJECT_ID, body: adUpdateBody }, [
  'account_id',
  'ad_id',
  'body',
]);

export const updateAd: ToolRow<GatewayDeps> = {
  name: 'ads_update_ad',
  title: 'Prepare an ad update',
  group: 'Campaign creation',
  behavior: 'prepare',
  features: [],
  description:
    'Prepares an update of an ad (name, creative, status, landing page configuration) and returns a change_id. ' +
    'The fields given replace the live ones (creative fields one by one); the ad that would result is checked ' +
    '(an image_crop only on a chat_card with an image, square and within the image), and a change that would ' +
    'change nothing is refused. A new image is named by creative.file_id, a file the ad account must have, or ' +
    'by creative.asset_id, a saved campaign asset of the account, whose image is pinned with the change (its ' +
    'sha256 is part of the digest) and uploaded only when the approved change is applied. Nothing changes on the ' +
    'ad account until a person approves the change in the dashboard and ads_apply_change applies it. ' +
    'Upstream: POST /ads/{ad_id}.',
  input: updateAdInput,
  example: {
    account_id: '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90',
    ad_id: 'ad_0123456789abcdef',
    body: {
      name: 'Spring Sale — chat card',
      status: 'paused',
      creative: { title: 'Two plants for one', target_url: 'https://shop.example.com/spring' },
      landing_page_configuration: null,
    },
  },
  route: {
    kind: 'prepare',
    object: 'ad',
    effect: 'update',
    operation: { method: 'POST', path: '/ads/{ad_id}' },
    target: '/ads/{ad_id}',
    body: 'body',
  },
};

const archiveAdInput = object({ account_id: accountId, ad_id: OBJECT_ID }, ['account_id', 'ad_id']);

export const archiveAd: ToolRow<GatewayDeps> = {
  name: 'ads_archive_ad',
  title: 'Prepare archiving an ad',
  group: 'Campaign creation',
  behavior: 'prepare',
  features: [],
  description:
    'Prepares archiving an ad and returns a change_id. The ad keeps serving until a person approves the change and ' +
    'ads_apply_change applies it. Upstream: POST /ads/{ad_id}/archive.',
  input: archiveAdInput,
  example: { account_id: '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90', ad_id: 'ad_0123456789abcdef' },
  destructive: true,
  route: {
    kind: 'prepare',
    object: 'ad',
    effect: 'archive',
    operation: { method: 'POST', path: '/ads/{ad_id}/archive' },
    target: '/ads/{ad_id}',
  },
};

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
  status: enumOf(['prepared', 'approved', 'expired', 'rejected', 'applying', 'applied', 'failed']),
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
