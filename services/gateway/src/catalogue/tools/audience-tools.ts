/**
 * Custom audiences: list them, replace an audience's members from an uploaded file, merge
 * audiences into a new one, archive one, and follow an operation. Members are never shown: only
 * privacy-safe counts and an operation's lifecycle.
 */
import { audienceMergeBody, audienceReplaceBody } from '@adsmcp/runtime/platform-bodies';
import type { GatewayDeps } from '../../deps.ts';
import type { ToolRow } from '../catalogue.ts';
import { array, enumOf, object, string } from '../schema.ts';
import { accountId, EXAMPLE_ACCOUNT, listPaging, PAGING_TEXT, PREPARE_TEXT } from './platform-arguments.ts';

const audienceId = string({
  min: 1,
  max: 255,
  pattern: /^[A-Za-z0-9_.:-]+$/,
  patternHint: 'an id of letters, digits, underscore, hyphen, dot or colon',
  description: 'The custom audience (ads_list_custom_audiences lists them).',
});

const EXAMPLE_AUDIENCE = 'ca_0123456789abcdef';

export const listCustomAudiences: ToolRow<GatewayDeps> = {
  name: 'ads_list_custom_audiences',
  title: 'List custom audiences',
  group: 'Conversions and audiences',
  behavior: 'read',
  features: [],
  description:
    'Lists the custom audiences of an ad account (upstream GET /custom_audiences): `custom_audiences` (id, name, ' +
    'status, revision, policy_revision, eligible_uses, matched_count, matched_count_range, latest_operation) and ' +
    '`paging`. intended_use keeps the audiences eligible for it (exclusion from 100 matched members, inclusion from ' +
    '1000, bid_multiplier from 10 000); matched_count_granularity granular shows the count rounded to two significant ' +
    'figures (below 1000 no count is shown). The revision is the expected_revision of ' +
    `ads_replace_custom_audience_members. Members are never returned. ${PAGING_TEXT} Changes nothing.`,
  input: object(
    {
      account_id: accountId,
      intended_use: enumOf(
        ['inclusion', 'exclusion', 'bid_multiplier'],
        'Only the audiences eligible for this use.',
      ),
      custom_audience_ids: array(string({ min: 1, max: 255 }), {
        min: 1,
        max: 500,
        description: 'Only these audiences (1 to 500 ids); omit it to list every audience.',
      }),
      policy_revision: string({
        min: 64,
        max: 64,
        description: 'Only the audiences accepted under this data-use policy revision (64 characters).',
      }),
      matched_count_granularity: enumOf(['granular'], 'granular: show matched_count, rounded.'),
      ...listPaging(500),
    },
    ['account_id'],
  ),
  example: {
    account_id: EXAMPLE_ACCOUNT,
    intended_use: 'bid_multiplier',
    custom_audience_ids: [EXAMPLE_AUDIENCE],
    policy_revision: 'f'.repeat(64),
    matched_count_granularity: 'granular',
    limit: 100,
    after: 'Y2E6MTI=',
    order: 'asc',
  },
  route: {
    kind: 'upstream-read',
    path: '/custom_audiences',
    shape: 'list',
    result: 'custom_audiences',
    notFound: 'the ad platform found no custom audiences listing for ad account {account_id}',
  },
};

export const replaceCustomAudienceMembers: ToolRow<GatewayDeps> = {
  name: 'ads_replace_custom_audience_members',
  title: 'Prepare replacing custom audience members',
  group: 'Conversions and audiences',
  behavior: 'prepare',
  features: [],
  description:
    'Prepares replacing all members of a custom audience with those of an uploaded file. expected_revision must be ' +
    'the audience’s current revision: a stale one is refused when the change is prepared, naming the current one. ' +
    `${PREPARE_TEXT} The applied change’s upstream_response is an operation (id, status pending → processing → completed); ` +
    'follow it with ads_get_custom_audience_operation. Upstream: POST /custom_audiences/{custom_audience_id}/replace.',
  input: object({ account_id: accountId, custom_audience_id: audienceId, body: audienceReplaceBody }, [
    'account_id',
    'custom_audience_id',
    'body',
  ]),
  example: {
    account_id: EXAMPLE_ACCOUNT,
    custom_audience_id: EXAMPLE_AUDIENCE,
    body: {
      file_id: 'file_members_2026_11',
      expected_revision: 3,
      filename: 'members.csv',
      mimetype: 'text/csv',
      file_size: 2_600_000,
      identifier_type: 'email_sha256',
      identifier_resolution: 'auto',
    },
  },
  destructive: true,
  route: {
    kind: 'prepare',
    object: 'custom_audience',
    effect: 'replace',
    operation: { method: 'POST', path: '/custom_audiences/{custom_audience_id}/replace' },
    target: '/custom_audiences/{custom_audience_id}',
    body: 'body',
  },
};

export const mergeCustomAudiences: ToolRow<GatewayDeps> = {
  name: 'ads_merge_custom_audiences',
  title: 'Prepare merging custom audiences',
  group: 'Conversions and audiences',
  behavior: 'prepare',
  features: [],
  description:
    'Prepares creating an independent custom audience with all matched members of the source audiences (the sources ' +
    'stay as they are). A source the account does not have, or an archived one, is refused when the change is ' +
    `prepared. ${PREPARE_TEXT} The applied change’s upstream_response is the new audience and an operation; the ` +
    'audience has a count once the operation completes (ads_get_custom_audience_operation). Upstream: POST ' +
    '/custom_audiences/merge.',
  input: object({ account_id: accountId, body: audienceMergeBody }, ['account_id', 'body']),
  example: {
    account_id: EXAMPLE_ACCOUNT,
    body: { name: 'Buyers and subscribers', custom_audience_ids: [EXAMPLE_AUDIENCE, 'ca_fedcba9876543210'] },
  },
  route: {
    kind: 'prepare',
    object: 'custom_audience',
    effect: 'merge',
    operation: { method: 'POST', path: '/custom_audiences/merge' },
    body: 'body',
  },
};

export const archiveCustomAudience: ToolRow<GatewayDeps> = {
  name: 'ads_archive_custom_audience',
  title: 'Prepare archiving a custom audience',
  group: 'Conversions and audiences',
  behavior: 'prepare',
  features: [],
  description:
    'Prepares archiving a custom audience: an archived audience can no longer be targeted, replaced or merged. ' +
    `Archiving an archived audience is refused as a change that changes nothing. ${PREPARE_TEXT} Upstream: POST ` +
    '/custom_audiences/{custom_audience_id}/archive.',
  input: object({ account_id: accountId, custom_audience_id: audienceId }, [
    'account_id',
    'custom_audience_id',
  ]),
  example: { account_id: EXAMPLE_ACCOUNT, custom_audience_id: EXAMPLE_AUDIENCE },
  destructive: true,
  route: {
    kind: 'prepare',
    object: 'custom_audience',
    effect: 'archive',
    operation: { method: 'POST', path: '/custom_audiences/{custom_audience_id}/archive' },
    target: '/custom_audiences/{custom_audience_id}',
  },
};

export const getCustomAudienceOperation: ToolRow<GatewayDeps> = {
  name: 'ads_get_custom_audience_operation',
  title: 'Get a custom audience operation',
  group: 'Conversions and audiences',
  behavior: 'read',
  features: [],
  description:
    'Reads the privacy-safe lifecycle of a replace or merge operation (upstream GET ' +
    '/custom_audiences/{custom_audience_id}/operations/{operation_id}): `operation` {id, custom_audience_id, type, ' +
    'status pending | processing | completed, revision, created_at, started_at, completed_at, matched_count, ' +
    'matched_count_range}. The count appears when the operation completes; while it is pending or processing, ask ' +
    'again later. Members are never returned. Changes nothing.',
  input: object(
    {
      account_id: accountId,
      custom_audience_id: audienceId,
      operation_id: string({
        min: 1,
        max: 128,
        description: 'The operation: the id in the result of an applied replace or merge.',
      }),
    },
    ['account_id', 'custom_audience_id', 'operation_id'],
  ),
  example: {
    account_id: EXAMPLE_ACCOUNT,
    custom_audience_id: EXAMPLE_AUDIENCE,
    operation_id: 'cao_0123456789abcdef',
  },
  route: {
    kind: 'upstream-read',
    path: '/custom_audiences/{custom_audience_id}/operations/{operation_id}',
    shape: 'get',
    result: 'operation',
    notFound:
      'no operation {operation_id} of custom audience {custom_audience_id} in ad account {account_id}; the result of the applied change names it',
  },
};

export const audienceTools: readonly ToolRow<GatewayDeps>[] = [
  listCustomAudiences,
  replaceCustomAudienceMembers,
  mergeCustomAudiences,
  archiveCustomAudience,
  getCustomAudienceOperation,
];
