/**
 * Optimization review runs and proposals (need the optimizer feature). The agent requests or
 * finds a queued run, claims it (and gets a performance snapshot of the optimizer's campaigns),
 * and completes it with proposals; a person approves a proposal in the dashboard, and the
 * optimizer publishes it as a change.
 */

import {
  PerformanceSnapshotSchema,
  ReviewRunSchema,
  ReviewService,
} from '@adsmcp/proto/optimizer/v1/reviews_pb';
import { SnapshotService } from '@adsmcp/proto/optimizer/v1/snapshot_pb';
import type { GatewayDeps } from '../../deps.ts';
import type { ToolRow } from '../catalogue.ts';
import { type FieldAdditions, inputFromRequest } from '../input-schema.ts';
import { messageSchema } from '../output-schema.ts';

const GROUP = 'Automation and optimization';
const FEATURES = ['optimizer'] as const;

const page = {
  limit: { description: 'Page size; 20 when omitted.' },
  offset: { description: 'Items to skip; 0 when omitted.' },
};

/** What a variant's fields add to Variant's rules: their descriptions and visible text. */
const variant = {
  description:
    'An optimization variant: a new title, body and target URL for an existing ad, and optionally a new image.',
  fields: {
    base_ad_id: {
      description: 'The ad of the optimizer’s campaigns whose creative this variant would replace.',
    },
    name: { nonBlank: true, description: 'A name for the proposal.' },
    title: { nonBlank: true, description: 'The new creative title.' },
    body: { nonBlank: true, description: 'The new creative body.' },
    target_url: {
      description:
        'The https landing page (https://host/path, no spaces, backslashes or user name); its hostname must be one of the optimizer’s allowed_domains.',
    },
    rationale: { multiline: true, nonBlank: true, description: 'Why, from the evidence.' },
    hypothesis: { multiline: true, nonBlank: true, description: 'What should improve, and how much.' },
    asset_id: {
      description:
        'A campaign image for the ad (ads_save_campaign_asset, saved for the optimizer’s ad account): the reviewer ' +
        'sees it beside the base ad, and publishing puts it on the ad, uploaded to the ad platform only when the ' +
        'approved change is applied. Leave it out to keep the ad’s image. An unknown, archived or other ' +
        'account’s asset is refused, naming the variant; one archived after it was submitted fails the proposal ' +
        'at publishing, with the reason.',
    },
  },
} satisfies FieldAdditions;

const EXAMPLE_OPTIMIZER = '8d1e6f3a-2c4b-4e7a-b9d0-5f3c1a7e2b64';
const EXAMPLE_RUN = '5b2f7c1d-9e4a-4f3b-8c6d-1a2e3f4b5c6d';
const EXAMPLE_TOKEN = 'c3d4e5f6-a7b8-4c9d-8e1f-2a3b4c5d6e7f';
const EXAMPLE_PROPOSAL = '7e6d5c4b-3a29-4817-9f6e-5d4c3b2a1908';
const EXAMPLE_VARIANT = {
  base_ad_id: 'ad_0123456789abcdef',
  name: 'Free shipping headline',
  title: 'Free shipping on every plant',
  body: 'Healthy plants delivered to your door in two days.',
  target_url: 'https://example.com/plants',
  rationale: 'The ad has a CTR of 0.4% against 0.9% for the campaign; its title names no offer.',
  hypothesis: 'Naming the free-shipping offer raises CTR to at least 0.7%.',
};

export const requestReview: ToolRow<GatewayDeps> = {
  name: 'ads_request_optimization_review',
  title: 'Request optimization review',
  group: GROUP,
  behavior: 'write',
  features: FEATURES,
  description:
    'Queues a review of an enabled optimizer, to be claimed and completed by the connected agent ' +
    '(ads_claim_optimization_run, then ads_complete_optimization_run). Open work is reused: when the ' +
    'optimizer already has a queued or claimed run, that run is returned with created false. A paused ' +
    'optimizer is refused. Changes nothing in the ad account.',
  input: inputFromRequest(ReviewService.method.requestReview.input, {
    optimizer_id: { description: 'The optimizer to review.' },
  }),
  example: { optimizer_id: EXAMPLE_OPTIMIZER },
  idempotent: true,
  route: { kind: 'rpc', method: ReviewService.method.requestReview },
};

export const listRuns: ToolRow<GatewayDeps> = {
  name: 'ads_list_optimization_runs',
  title: 'List optimization runs',
  group: GROUP,
  behavior: 'read',
  features: FEATURES,
  description:
    'Lists the workspace’s review runs, newest first, optionally of one optimizer and in one status. ' +
    'status queued lists the work to claim (a claim that ran out is queued again). Returns total and ' +
    'next_offset (null on the last page).',
  input: inputFromRequest(ReviewService.method.listRuns.input, {
    optimizer_id: { description: 'Only the runs of this optimizer.' },
    status: { description: 'Only runs in this status.' },
    ...page,
  }),
  example: { optimizer_id: EXAMPLE_OPTIMIZER, status: 'queued', limit: 20, offset: 0 },
  route: { kind: 'rpc', method: ReviewService.method.listRuns },
};

export const getRun: ToolRow<GatewayDeps> = {
  name: 'ads_get_optimization_run',
  title: 'Get optimization run',
  group: GROUP,
  behavior: 'read',
  features: FEATURES,
  description:
    'Returns one review run: its status, claim expiry, the snapshot taken when it was claimed, its ' +
    'outcome and summary, and the ids of the proposals it created.',
  input: inputFromRequest(ReviewService.method.getRun.input, { run_id: { description: 'The run.' } }),
  example: { run_id: EXAMPLE_RUN },
  route: { kind: 'rpc', method: ReviewService.method.getRun },
};

const claimOutput = {
  type: 'object',
  properties: {
    run: messageSchema(ReviewRunSchema),
    claim_token: { type: 'string' },
    snapshot: messageSchema(PerformanceSnapshotSchema),
  },
  required: ['run', 'claim_token', 'snapshot'],
  additionalProperties: false,
};

const claimInput = inputFromRequest(SnapshotService.method.claimRunWithSnapshot.input, {
  run_id: { description: 'The queued run (ads_list_optimization_runs with status queued lists them).' },
  claim_token: {
    description: 'Optional: your own token for the claim; a retry with it returns your claim again.',
  },
});

export const claimRun: ToolRow<GatewayDeps> = {
  name: 'ads_claim_optimization_run',
  title: 'Claim optimization run',
  group: GROUP,
  behavior: 'write',
  features: FEATURES,
  description:
    'Claims one queued review run for 30 minutes and returns a claim_token and a performance snapshot: ' +
    'every ad of the optimizer’s campaigns with its impressions, clicks, conversions and spend over ' +
    'window_hours ending reporting_delay_hours before the claim (account-local days, read from the ad ' +
    'platform’s insights), ctr, cpc and cpa, and whether it meets the configuration’s min_impressions, ' +
    'min_clicks and (for a cpa goal) min_conversions; ads below them are marked with the thresholds they miss ' +
    'and are not enough evidence to judge. Pass your own claim_token to retry a claim you hold. A run claimed ' +
    'by someone else is refused; a claim that ran out puts the run back in the queue. Drafting only: nothing ' +
    'in the ad account changes. Complete the run with ads_complete_optimization_run.',
  input: claimInput,
  example: { run_id: EXAMPLE_RUN, claim_token: EXAMPLE_TOKEN },
  output: claimOutput,
  openWorld: true,
  // A snapshot that cannot be read leaves the run claimed: the optimizer's refusal names run_id and
  // claim_token in its details, which the tool error shows (tool-call.ts).
  route: { kind: 'rpc', method: SnapshotService.method.claimRunWithSnapshot },
};

export const completeRun: ToolRow<GatewayDeps> = {
  name: 'ads_complete_optimization_run',
  title: 'Complete optimization run',
  group: GROUP,
  behavior: 'write',
  features: FEATURES,
  description:
    'Completes a run you claimed, with its claim_token: outcome proposals (with 1 to 100 variants), no_change ' +
    'or insufficient_evidence (with none), and a summary. Each variant proposes a new title, body and ' +
    'target_url for one ad of the run’s snapshot (one variant per ad); its target_url must be https on one of ' +
    'the optimizer’s allowed_domains, and no campaign may get more than max_ads_per_campaign variants. Each ' +
    'variant becomes a proposal pending review: a person approves it in the dashboard (never through this ' +
    'client) within review_hours, and it is then published as a change to the base ad. Repeating an ' +
    'identical completion returns the same result (repeated true); a different one is refused.',
  input: inputFromRequest(ReviewService.method.completeRun.input, {
    run_id: { description: 'The run you claimed.' },
    claim_token: { description: 'The claim_token ads_claim_optimization_run returned.' },
    outcome: { description: 'What the review found.' },
    summary: { multiline: true, nonBlank: true, description: 'What the review found, for people.' },
    variants: { items: variant, description: 'The proposed variants (outcome proposals only).' },
  }),
  example: {
    run_id: EXAMPLE_RUN,
    claim_token: EXAMPLE_TOKEN,
    outcome: 'proposals',
    summary: 'One ad of two has a low CTR with enough evidence; a variant names the offer.',
    variants: [EXAMPLE_VARIANT],
  },
  route: { kind: 'rpc', method: ReviewService.method.completeRun },
};

export const listProposals: ToolRow<GatewayDeps> = {
  name: 'ads_list_optimization_proposals',
  title: 'List optimization proposals',
  group: GROUP,
  behavior: 'read',
  features: FEATURES,
  description:
    'Lists the workspace’s proposals, newest first, optionally of one optimizer and in one status: ' +
    'pending_review, changes_requested, approved, publishing, published, failed, rejected, cancelled or ' +
    'expired. Returns total and next_offset (null on the last page).',
  input: inputFromRequest(
    ReviewService.method.listProposals.input,
    {
      optimizer_id: { description: 'Only the proposals of this optimizer.' },
      status: { description: 'Only proposals in this status.' },
      ...page,
    },
    // The dashboard's filters: the tool lists by optimizer and status.
    { omit: ['account_id', 'run_id', 'created_after', 'created_before'] },
  ),
  example: { optimizer_id: EXAMPLE_OPTIMIZER, status: 'pending_review', limit: 20, offset: 0 },
  route: { kind: 'rpc', method: ReviewService.method.listProposals },
};

const proposalId = { proposal_id: { description: 'The proposal.' } };

export const getProposal: ToolRow<GatewayDeps> = {
  name: 'ads_get_optimization_proposal',
  title: 'Get optimization proposal',
  group: GROUP,
  behavior: 'read',
  features: FEATURES,
  description:
    'Returns one proposal: its status and revision, the variant, the base ad’s evidence from the run’s ' +
    'snapshot, the review (note, who), the approval (who, when, publish_by), and the change that publishes ' +
    'it (change_id, change_status, change_error) once dispatched. ads_get_change shows that change in full.',
  input: inputFromRequest(ReviewService.method.getProposal.input, proposalId),
  example: { proposal_id: EXAMPLE_PROPOSAL },
  route: { kind: 'rpc', method: ReviewService.method.getProposal },
};

const revision = { description: 'The revision you last read.' };

export const editProposal: ToolRow<GatewayDeps> = {
  name: 'ads_edit_optimization_proposal',
  title: 'Edit optimization proposal',
  group: GROUP,
  behavior: 'write',
  features: FEATURES,
  description:
    'Replaces the variant of a proposal that is not approved (pending review, changes requested, or expired ' +
    'unreviewed), at its current revision; it goes back to dashboard review with a new review_hours window. ' +
    'The base ad stays the same. An approved proposal cannot be changed.',
  input: inputFromRequest(ReviewService.method.editProposal.input, {
    ...proposalId,
    expected_revision: revision,
    variant,
  }),
  example: { proposal_id: EXAMPLE_PROPOSAL, expected_revision: 2, variant: EXAMPLE_VARIANT },
  route: { kind: 'rpc', method: ReviewService.method.editProposal },
};

export const reviewProposal: ToolRow<GatewayDeps> = {
  name: 'ads_review_optimization_proposal',
  title: 'Review optimization proposal',
  group: GROUP,
  behavior: 'write',
  features: FEATURES,
  description:
    'Rejects a proposal not yet approved, or asks for changes to one pending review, with a note, at its ' +
    'current revision. Approval to publish is not possible here: a person approves in the dashboard.',
  input: inputFromRequest(ReviewService.method.reviewProposal.input, {
    ...proposalId,
    expected_revision: revision,
    decision: { description: 'reject, or request_changes.' },
    note: { multiline: true, nonBlank: true, description: 'Why.' },
  }),
  example: {
    proposal_id: EXAMPLE_PROPOSAL,
    expected_revision: 1,
    decision: 'request_changes',
    note: 'Keep the brand name in the title.',
  },
  route: { kind: 'rpc', method: ReviewService.method.reviewProposal },
};

export const cancelProposal: ToolRow<GatewayDeps> = {
  name: 'ads_cancel_optimization_proposal',
  title: 'Cancel optimization proposal',
  group: GROUP,
  behavior: 'write',
  features: FEATURES,
  description:
    'Cancels a proposal: work not yet dispatched stops (an approved proposal is not published). A change ' +
    'already dispatched is not undone: what it created remains and live ads stay live. Cancelling a ' +
    'cancelled proposal returns it unchanged; a published, failed or rejected one is refused.',
  input: inputFromRequest(ReviewService.method.cancelProposal.input, proposalId),
  example: { proposal_id: EXAMPLE_PROPOSAL },
  idempotent: true,
  route: { kind: 'rpc', method: ReviewService.method.cancelProposal },
};

export const reviewTools: readonly ToolRow<GatewayDeps>[] = [
  requestReview,
  listRuns,
  getRun,
  claimRun,
  completeRun,
  listProposals,
  getProposal,
  editProposal,
  reviewProposal,
  cancelProposal,
];
