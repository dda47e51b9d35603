/**
 * Proposals: one variant of a completed run, reviewed by a person in the dashboard and published
 * as a change through the changes service.
 *
 * Status values: pending_review (waiting for a person, until review_expires_at), changes_requested
 * (the agent should edit it), approved (a person approved it in the dashboard; waiting to be
 * dispatched, until publish_by), publishing (dispatched as a change that is being applied),
 * published (the change was applied), failed (the change failed), rejected, cancelled and expired
 * (the review window or the publish window ran out). pending_review and approved show as expired
 * once their window ran out, decided when they are read.
 */
import { AccessLevel } from '@adsmcp/proto/adsmcp/v1/access_pb';
import { accessNeeds } from '@adsmcp/runtime/access-policy';
import {
  FailedPreconditionError,
  InvalidArgumentError,
  PermissionDeniedError,
  StaleRevisionError,
} from '@adsmcp/runtime/errors';
import type { Principal } from '@adsmcp/runtime/principal';
import { hasVisibleContent, hiddenCharacter, textLength } from '@adsmcp/runtime/text';
import type { OptimizerConfig } from './optimizer.ts';
import { type AdPerformance, checkTargetUrl, publishDeadline, reviewExpiry, type Variant } from './review.ts';

export const PROPOSAL_STATUSES = [
  'pending_review',
  'changes_requested',
  'approved',
  'publishing',
  'published',
  'failed',
  'rejected',
  'cancelled',
  'expired',
] as const;
export type ProposalStatus = (typeof PROPOSAL_STATUSES)[number];

export interface Proposal {
  proposalId: string;
  workspaceId: string;
  optimizerId: string;
  accountId: string;
  runId: string;
  position: number;
  status: ProposalStatus;
  revision: number;
  variant: Variant;
  evidence: AdPerformance | null;
  reviewExpiresAt: Date | null;
  reviewNote: string | null;
  reviewedBy: string | null;
  approvedBy: string | null;
  approvedUserId: string | null;
  approvedAt: Date | null;
  publishBy: Date | null;
  changeId: string | null;
  changeStatus: string | null;
  changeError: string | null;
  publishedAt: Date | null;
  cancelledAt: Date | null;
  cancelReason: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** The status a proposal shows: a window that ran out is expired. */
export function shownProposalStatus(
  p: Pick<Proposal, 'status' | 'reviewExpiresAt' | 'publishBy'>,
  now: Date,
): ProposalStatus {
  if (p.status === 'pending_review' && p.reviewExpiresAt !== null && p.reviewExpiresAt <= now)
    return 'expired';
  if (p.status === 'approved' && p.publishBy !== null && p.publishBy <= now) return 'expired';
  return p.status;
}

/** A new proposal for one variant of a completed run. */
export function newProposal(
  ids: { proposalId: string; workspaceId: string; optimizerId: string; accountId: string; runId: string },
  position: number,
  variant: Variant,
  evidence: AdPerformance | null,
  config: OptimizerConfig,
  now: Date,
): Proposal {
  return {
    ...ids,
    position,
    status: 'pending_review',
    revision: 1,
    variant,
    evidence,
    reviewExpiresAt: reviewExpiry(config, now),
    reviewNote: null,
    reviewedBy: null,
    approvedBy: null,
    approvedUserId: null,
    approvedAt: null,
    publishBy: null,
    changeId: null,
    changeStatus: null,
    changeError: null,
    publishedAt: null,
    cancelledAt: null,
    cancelReason: null,
    createdAt: now,
    updatedAt: now,
  };
}

function requireRevision(p: Proposal, expected: number): void {
  if (expected !== p.revision) throw new StaleRevisionError(p.revision, 'proposal');
}

const EDITABLE: readonly ProposalStatus[] = ['pending_review', 'changes_requested', 'expired'];

/**
 * editedProposal replaces the variant of a proposal nobody approved, at the revision the caller
 * read; it goes back to dashboard review with a new review window. The base ad stays the same.
 */
export function editedProposal(
  p: Proposal,
  expectedRevision: number,
  variant: Variant,
  config: OptimizerConfig,
  now: Date,
): Proposal {
  const status = shownProposalStatus(p, now);
  if (!EDITABLE.includes(status) || (status === 'expired' && p.status !== 'pending_review')) {
    throw new FailedPreconditionError(
      status === 'approved' || status === 'publishing' || status === 'published'
        ? `proposal ${p.proposalId} is ${status}: an approved proposal cannot be changed`
        : `proposal ${p.proposalId} is ${status} and cannot be edited`,
    );
  }
  requireRevision(p, expectedRevision);
  if (variant.baseAdId !== p.variant.baseAdId) {
    throw new InvalidArgumentError(
      `variant.base_ad_id must stay ${p.variant.baseAdId}: a proposal is about one base ad`,
    );
  }
  checkTargetUrl('variant.target_url', variant.targetUrl, config.allowedDomains);
  return {
    ...p,
    status: 'pending_review',
    revision: p.revision + 1,
    variant,
    reviewExpiresAt: reviewExpiry(config, now),
    updatedAt: now,
  };
}

export const DECISIONS = ['reject', 'request_changes'] as const;

/** The longest review note, in characters (code points, as the tool's schema counts them). */
export const NOTE_MAX = 4000;

/**
 * checkNote holds a review note to the tool's rules: 1 to 4000 characters counted as code points
 * (an emoji is one), a visible character, and no control or format character but line breaks and
 * tabs. The tool's schema says so for agents; the dashboard's Reject form arrives here as typed.
 */
export function checkNote(note: string): void {
  const length = textLength(note);
  if (length < 1 || length > NOTE_MAX) {
    throw new InvalidArgumentError(`note must be 1 to ${NOTE_MAX} characters, saying why (got ${length})`);
  }
  const hidden = hiddenCharacter(note, true);
  if (hidden !== undefined) {
    throw new InvalidArgumentError(
      `note must not contain the invisible character ${hidden}: control, format and blank characters hide or change what the text shows (line breaks and tabs are allowed)`,
    );
  }
  if (!hasVisibleContent(note)) {
    throw new InvalidArgumentError('note must contain a visible character, not only white space, saying why');
  }
}

/** A reviewer's decision other than approval: reject, or ask the agent for changes. */
export function reviewedProposal(
  p: Proposal,
  expectedRevision: number,
  decision: string,
  note: string,
  by: string,
  now: Date,
): Proposal {
  if (!(DECISIONS as readonly string[]).includes(decision)) {
    throw new InvalidArgumentError(`decision must be one of ${DECISIONS.join(', ')}`);
  }
  checkNote(note);
  const status = shownProposalStatus(p, now);
  const open: readonly ProposalStatus[] =
    decision === 'reject' ? ['pending_review', 'changes_requested', 'expired'] : ['pending_review'];
  if (!open.includes(status) || (status === 'expired' && p.status !== 'pending_review')) {
    throw new FailedPreconditionError(
      `proposal ${p.proposalId} is ${status}; ${decision === 'reject' ? 'only a proposal not yet approved can be rejected' : 'changes can be requested only of a proposal pending review'}`,
    );
  }
  requireRevision(p, expectedRevision);
  return {
    ...p,
    status: decision === 'reject' ? 'rejected' : 'changes_requested',
    revision: p.revision + 1,
    reviewNote: note,
    reviewedBy: by,
    updatedAt: now,
  };
}

/** Approval belongs to a person signed in to the dashboard with the admin or editor role. */
export function checkMayApprove(principal: Principal): void {
  if (principal.via !== 'dashboard' || principal.userId === null) {
    throw new PermissionDeniedError(
      'a proposal is approved by a person in the dashboard, not through an MCP client',
    );
  }
  if (!accessNeeds(AccessLevel.WRITE).roles.includes(principal.role)) {
    throw new PermissionDeniedError(`the role "${principal.role}" may not approve proposals`);
  }
}

/** The proposal approved by `by` for publishing within the configuration's publish_hours. */
export function approvedProposal(
  p: Proposal,
  expectedRevision: number,
  optimizer: { enabled: boolean },
  config: OptimizerConfig,
  approver: { by: string; userId: string },
  now: Date,
): Proposal {
  const status = shownProposalStatus(p, now);
  if (status !== 'pending_review') {
    throw new FailedPreconditionError(
      status === 'expired'
        ? `proposal ${p.proposalId} waited longer than review_hours (until ${p.reviewExpiresAt?.toISOString()}); the agent can edit it back into review`
        : `proposal ${p.proposalId} is ${status}; only a proposal pending review can be approved`,
    );
  }
  requireRevision(p, expectedRevision);
  if (!optimizer.enabled) {
    throw new FailedPreconditionError(
      'the optimizer is paused: nothing it proposes is published until it is resumed',
    );
  }
  return {
    ...p,
    status: 'approved',
    revision: p.revision + 1,
    approvedBy: approver.by,
    approvedUserId: approver.userId,
    approvedAt: now,
    publishBy: publishDeadline(config, now),
    updatedAt: now,
  };
}

const FINAL: readonly ProposalStatus[] = ['published', 'failed', 'rejected'];

/**
 * cancelledProposal stops what has not been dispatched. Anything already published stays live; a
 * proposal already cancelled is returned as it is (undefined: nothing to write).
 */
export function cancelledProposal(p: Proposal, reason: string, now: Date): Proposal | undefined {
  if (p.status === 'cancelled') return undefined;
  if (FINAL.includes(p.status)) {
    throw new FailedPreconditionError(
      `proposal ${p.proposalId} is ${p.status}; there is nothing left to stop (a published ad stays live)`,
    );
  }
  return {
    ...p,
    status: 'cancelled',
    revision: p.revision + 1,
    cancelledAt: now,
    cancelReason: reason,
    updatedAt: now,
  };
}

/**
 * The ad update that publishes a variant: the base ad's creative gets its title, body and URL,
 * and its image when the variant names a campaign asset (`asset_id`). The changes service pins
 * that image when it records the change and uploads it to the platform when it applies it,
 * sending the uploaded file as the creative's `file_id`.
 */
export function publishBody(v: Variant): Record<string, unknown> {
  return {
    creative: {
      title: v.title,
      body: v.body,
      target_url: v.targetUrl,
      ...(v.assetId !== undefined && { asset_id: v.assetId }),
    },
  };
}
