/** Optimizers, their review runs and proposals (need the optimizer feature). */

import { OptimizerService } from '@adsmcp/proto/optimizer/v1/optimizer_pb';
import { HOSTNAME_HINT } from '@adsmcp/runtime/ids';
import type { GatewayDeps } from '../../deps.ts';
import type { ToolRow } from '../catalogue.ts';
import { type FieldAdditions, inputFromRequest } from '../input-schema.ts';

const GROUP = 'Automation and optimization';
const FEATURES = ['optimizer'] as const;

/** What the config's fields add to OptimizerConfig's rules: descriptions, and null for an unset one. */
const optimizerConfig = {
  description: 'The optimizer configuration.',
  fields: {
    campaign_ids: {
      description: 'The campaigns of the account to review: 1 to 20 unique campaign ids.',
    },
    goal: { description: 'What to improve: cost per click, cost per action or click-through rate.' },
    // The optional fields take null too, as ads_get_optimizer shows an unset one: a config read
    // back saves unchanged.
    conversion_goal_id: {
      nullable: true,
      description: 'The conversion that counts as an action; null for none.',
    },
    target: { nullable: true, description: 'The goal value to reach; null for none.' },
    cadence_hours: { description: 'Hours between reviews.' },
    window_hours: { description: 'Hours of performance each review looks at.' },
    reporting_delay_hours: {
      description: 'Most recent hours left out, while the platform is still counting them.',
    },
    min_impressions: { description: 'Evidence needed before judging an ad.' },
    max_ads_per_campaign: { description: 'New ads one review may propose per campaign.' },
    review_hours: { description: 'Hours a proposal waits for review in the dashboard.' },
    publish_hours: { description: 'Hours an approved proposal has to be published.' },
    brand_instructions: {
      nullable: true,
      multiline: true,
      description: 'Voice and claims proposed copy must keep to; null for none.',
    },
    allowed_domains: {
      items: { patternHint: HOSTNAME_HINT },
      description: 'Hostnames (example.com, no scheme or path) proposed ads may link to: 1 to 30, unique.',
    },
  },
} satisfies FieldAdditions;

const saveInput = inputFromRequest(OptimizerService.method.saveOptimizer.input, {
  account_id: {
    description: 'The ad account (from ads_list_accounts) whose campaigns the optimizer reviews.',
  },
  name: { nonBlank: true },
  config: optimizerConfig,
  // false is a choice the caller makes: leaving it out would save the optimizer paused.
  enabled: {
    required: true,
    description: 'Whether reviews run on the cadence; false saves it paused.',
  },
  optimizer_id: { description: 'To update an optimizer: its id. Omit to create one.' },
  expected_revision: { description: 'Required when updating: the revision you last read.' },
});

const optimizerId = { optimizer_id: { description: 'The optimizer.' } };

const listInput = inputFromRequest(OptimizerService.method.listOptimizers.input, {
  account_id: { description: 'Only the optimizers of this ad account.' },
  limit: { description: 'Page size; 20 when omitted.' },
  offset: { description: 'Optimizers to skip; 0 when omitted.' },
});

const EXAMPLE_CONFIG = {
  campaign_ids: ['cmp_1001', 'cmp_1002'],
  goal: 'cpa',
  conversion_goal_id: 'purchase',
  target: 12.5,
  cadence_hours: 24,
  window_hours: 168,
  reporting_delay_hours: 48,
  min_impressions: 1000,
  min_clicks: 50,
  min_conversions: 5,
  max_ads_per_campaign: 3,
  review_hours: 24,
  publish_hours: 4,
  brand_instructions: 'Plain, friendly words; never promise results.',
  allowed_domains: ['example.com', 'shop.example.com'],
};

export const saveOptimizer: ToolRow<GatewayDeps> = {
  name: 'ads_save_optimizer',
  title: 'Save optimizer',
  group: GROUP,
  behavior: 'write',
  features: FEATURES,
  description:
    'Creates an optimizer for campaigns of an ad account, or updates one: pass optimizer_id and the expected_revision ' +
    'you last read (a stale revision is refused with the current one). The optimizer reviews performance every ' +
    'cadence_hours and may propose new ads, which a person approves in the dashboard before anything is published. ' +
    'Saving changes nothing in the ad account. enabled false saves it paused; enabled true resumes a paused one.',
  input: saveInput,
  example: {
    account_id: '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90',
    name: 'Weekly copy review',
    config: EXAMPLE_CONFIG,
    enabled: true,
    optimizer_id: '8d1e6f3a-2c4b-4e7a-b9d0-5f3c1a7e2b64',
    expected_revision: 3,
  },
  route: {
    kind: 'rpc',
    method: OptimizerService.method.saveOptimizer,
    account: 'account_id',
  },
};

export const getOptimizer: ToolRow<GatewayDeps> = {
  name: 'ads_get_optimizer',
  title: 'Get optimizer',
  group: GROUP,
  behavior: 'read',
  features: FEATURES,
  description:
    'Returns one optimizer of the workspace: its configuration, status (active or paused), revision (pass it as ' +
    'expected_revision to update), when it was paused and when its next review is due.',
  input: inputFromRequest(OptimizerService.method.getOptimizer.input, optimizerId),
  example: { optimizer_id: '8d1e6f3a-2c4b-4e7a-b9d0-5f3c1a7e2b64' },
  route: {
    kind: 'rpc',
    method: OptimizerService.method.getOptimizer,
  },
};

export const listOptimizers: ToolRow<GatewayDeps> = {
  name: 'ads_list_optimizers',
  title: 'List optimizers',
  group: GROUP,
  behavior: 'read',
  features: FEATURES,
  description:
    'Lists the optimizers of the workspace, or of one ad account, newest first. Returns total and next_offset ' +
    '(null on the last page); pass next_offset as offset for the next page.',
  input: listInput,
  example: { account_id: '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90', limit: 20, offset: 0 },
  route: {
    kind: 'rpc',
    method: OptimizerService.method.listOptimizers,
  },
};

export const pauseOptimizer: ToolRow<GatewayDeps> = {
  name: 'ads_pause_optimizer',
  title: 'Pause optimizer',
  group: GROUP,
  behavior: 'write',
  // Stopping is never gated: it stays allowed when the workspace's optimizer feature has ended.
  features: [],
  description:
    'Pauses an optimizer: future reviews and undispatched publishing stop; ads already live keep running. Needs no ' +
    'revision and is always allowed, also after the workspace’s optimizer feature has ended; pausing a paused ' +
    'optimizer returns it unchanged. Save it with enabled true to resume.',
  input: inputFromRequest(OptimizerService.method.pauseOptimizer.input, optimizerId),
  idempotent: true,
  example: { optimizer_id: '8d1e6f3a-2c4b-4e7a-b9d0-5f3c1a7e2b64' },
  route: {
    kind: 'rpc',
    method: OptimizerService.method.pauseOptimizer,
  },
};

export const optimizerTools: readonly ToolRow<GatewayDeps>[] = [
  saveOptimizer,
  getOptimizer,
  listOptimizers,
  pauseOptimizer,
];
