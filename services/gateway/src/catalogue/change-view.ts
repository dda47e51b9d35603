/** A prepared change as every tool shows it: the reviewed operation, its state and what to do next. */
import { type Change, ChangeResolutionSchema, ChangeStatusSchema } from '@adsmcp/proto/changes/v1/changes_pb';
import { enumWord, enumWords } from '@adsmcp/runtime/enum-words';
import { ToolFailure } from '../mcp/tool-failure.ts';
import type { JsonSchema } from './schema.ts';

const NEXT_STEP: Record<string, string> = {
  prepared:
    'A person must approve this change in the dashboard; then call ads_apply_change with this change_id.',
  approved: 'Approved: call ads_apply_change with this change_id to apply it (before expires_at).',
  expired:
    'Expired: nobody approved it, or nobody asked to apply it after its approval, in time (see expires_at); it ' +
    'can no longer be approved or applied. Prepare it again if it is still wanted.',
  rejected: 'Rejected: it will not be applied.',
  applying: 'Being applied: call ads_get_change to see the outcome.',
  applied: 'Applied to the ad account.',
  failed: 'Failed: see error; prepare a new change if it is still wanted.',
};

const STATUSES = enumWords(ChangeStatusSchema);

const text = { type: 'string' };
const nullableText = { type: ['string', 'null'] };

/** The published shape of a change (changeView's result). */
export const CHANGE_OUTPUT: JsonSchema = {
  type: 'object',
  properties: {
    change_id: text,
    account_id: text,
    tool: text,
    status: { type: 'string', enum: STATUSES },
    summary: text,
    operation: {
      type: 'object',
      properties: { method: text, path: text, body: { type: ['object', 'null'] } },
      required: ['method', 'path', 'body'],
      additionalProperties: false,
    },
    digest: text,
    expires_at: {
      type: ['string', 'null'],
      description:
        'When a prepared change stops being approvable, or an approved one stops being appliable if nobody asked ' +
        "to apply it (the workspace's settings: by default 72 hours after it was prepared, 24 hours after it was " +
        'approved); past it the status is expired. Null for every other status: once an apply was requested, ' +
        'the approval is used.',
    },
    review_url: text,
    next_step: text,
    prepared_by: text,
    prepared_at: text,
    approved_by: nullableText,
    approved_at: nullableText,
    rejected_by: nullableText,
    rejected_at: nullableText,
    reject_reason: nullableText,
    apply_requested_by: nullableText,
    apply_requested_at: nullableText,
    apply_retried_by: {
      type: ['string', 'null'],
      description:
        'Who last applied the change again after its apply failed with the outcome unknown (it was sent and the ' +
        'platform never answered); it is sent again with the same idempotency key. Null when it never was.',
    },
    apply_retried_at: nullableText,
    outcome_unknown: {
      type: 'boolean',
      description:
        'True when the apply failed after the change was sent and the platform never answered, and no person ' +
        'settled it: it may or may not have been applied. ads_apply_change sends it again with the same ' +
        'idempotency key (within 24 hours of its first send), or a person settles it in the dashboard.',
    },
    resolution: {
      type: ['string', 'null'],
      enum: [...enumWords(ChangeResolutionSchema), null],
      description:
        'How a person last settled an unknown outcome: send_again (sent again with the same idempotency key), ' +
        'applied (found applied on the ad platform) or not_applied (found not applied: it is not sent again). ' +
        'Null when nobody did.',
    },
    resolved_by: nullableText,
    resolved_at: nullableText,
    resolution_note: nullableText,
    applied_at: nullableText,
    upstream_status: { type: ['integer', 'null'] },
    upstream_response: {},
    error: nullableText,
    applied_differences: {
      type: 'array',
      items: text,
      description:
        "Once applied: where the platform's answer differs from what was reviewed, one line per field " +
        '("name: reviewed "A", applied "B""). Empty when the platform applied exactly what was reviewed, and ' +
        'when its answer is another object (an operation, a bulk job).',
    },
    uploads: {
      type: 'array',
      description:
        'The campaign images the change puts on the ad platform: each creative of the body that names an ' +
        'asset_id gets that asset’s image, pinned by its sha256 when the change was prepared and uploaded only ' +
        'when it is applied (file_id is the platform’s file, sent as the creative’s file_id; null before). Empty ' +
        'for a change without one.',
      items: {
        type: 'object',
        properties: {
          asset_id: text,
          name: text,
          mime_type: text,
          byte_size: { type: 'integer' },
          width: { type: 'integer' },
          height: { type: 'integer' },
          sha256: text,
          file_id: nullableText,
        },
        required: ['asset_id', 'name', 'mime_type', 'byte_size', 'width', 'height', 'sha256', 'file_id'],
        additionalProperties: false,
      },
    },
    reverts_change_id: {
      type: ['string', 'null'],
      description: 'The change this one reverts (ads_prepare_revert), or null.',
    },
    reverted_by: {
      type: 'array',
      items: text,
      description: 'The changes prepared to revert this one, oldest first; empty when none was.',
    },
    standards_checked: {
      type: 'array',
      description:
        'The account standards the change was checked against when it was prepared (each at the revision it had ' +
        'then, with its guidance for the reviewer); they are checked again before it is applied. Empty when the ' +
        'account had none.',
      items: {
        type: 'object',
        properties: {
          standard_id: text,
          name: text,
          revision: { type: 'integer' },
          guidance: text,
        },
        required: ['standard_id', 'name', 'revision', 'guidance'],
        additionalProperties: false,
      },
    },
  },
  required: [
    'change_id',
    'account_id',
    'tool',
    'status',
    'summary',
    'operation',
    'digest',
    'expires_at',
    'review_url',
    'next_step',
    'prepared_by',
    'prepared_at',
    'approved_by',
    'approved_at',
    'rejected_by',
    'rejected_at',
    'reject_reason',
    'apply_requested_by',
    'apply_requested_at',
    'apply_retried_by',
    'apply_retried_at',
    'outcome_unknown',
    'resolution',
    'resolved_by',
    'resolved_at',
    'resolution_note',
    'applied_at',
    'upstream_status',
    'upstream_response',
    'error',
    'applied_differences',
    'uploads',
    'reverts_change_id',
    'reverted_by',
    'standards_checked',
  ],
  additionalProperties: false,
};

function parse(text: string | undefined): unknown {
  if (text === undefined || text === '') return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The word of a change's status; a change always has one, so its absence is the service's fault. */
export function statusWord(c: Change): string {
  const word = enumWord(ChangeStatusSchema, c.state);
  if (word === null) throw new Error(`the changes service returned change ${c.changeId} without a status`);
  return word;
}

/** The word of how a person settled a change's unknown outcome, or null when nobody did. */
export function resolutionWord(c: Change): string | null {
  return enumWord(ChangeResolutionSchema, c.resolvedAs);
}

/**
 * changeView is the change as tools show it: a field the change does not have (an `optional` one
 * left unset, an enum left UNSPECIFIED) is null, and an enum value is its word.
 */
export function changeView(c: Change | undefined, publicUrl: string): Record<string, unknown> {
  if (c === undefined) throw new Error('the changes service returned no change');
  const status = statusWord(c);
  return {
    change_id: c.changeId,
    account_id: c.accountId,
    tool: c.tool,
    status,
    summary: c.summary,
    operation: {
      method: c.operation?.method ?? '',
      path: c.operation?.path ?? '',
      body: parse(c.operation?.bodyJson),
    },
    digest: c.digest,
    expires_at: c.expiresAt ?? null,
    review_url: `${publicUrl}/dashboard/changes/${c.changeId}`,
    next_step:
      status === 'applied' && c.appliedDifferences.length > 0
        ? "Applied, but the platform's result differs from what was reviewed: see applied_differences, and " +
          'check the object with its get tool.'
        : c.outcomeUnknown
          ? 'Failed with its outcome unknown: it may or may not have been applied. Call ads_apply_change to send ' +
            'it again with the same idempotency key (within 24 hours of its first send), or ask a person to ' +
            'settle it in the dashboard.'
          : (NEXT_STEP[status] ?? ''),
    prepared_by: c.preparedBy,
    prepared_at: c.preparedAt,
    approved_by: c.approvedBy ?? null,
    approved_at: c.approvedAt ?? null,
    rejected_by: c.rejectedBy ?? null,
    rejected_at: c.rejectedAt ?? null,
    reject_reason: c.rejectReason ?? null,
    apply_requested_by: c.applyRequestedBy ?? null,
    apply_requested_at: c.applyRequestedAt ?? null,
    apply_retried_by: c.applyRetriedBy ?? null,
    apply_retried_at: c.applyRetriedAt ?? null,
    outcome_unknown: c.outcomeUnknown,
    resolution: resolutionWord(c),
    resolved_by: c.resolvedBy ?? null,
    resolved_at: c.resolvedAt ?? null,
    resolution_note: c.resolutionNote ?? null,
    applied_at: c.appliedAt ?? null,
    upstream_status: c.upstreamStatus ?? null,
    upstream_response: parse(c.upstreamResponseJson),
    error: c.error ?? null,
    applied_differences: [...c.appliedDifferences],
    uploads: c.uploads.map((u) => ({
      asset_id: u.assetId,
      name: u.name,
      mime_type: u.mimeType,
      byte_size: u.byteSize,
      width: u.width,
      height: u.height,
      sha256: u.sha256,
      file_id: u.fileId ?? null,
    })),
    reverts_change_id: c.revertsChangeId ?? null,
    reverted_by: [...c.revertedBy],
    standards_checked: c.standardsChecked.map((s) => ({
      standard_id: s.standardId,
      name: s.name,
      revision: s.revision,
      guidance: s.guidance,
    })),
  };
}

/**
 * appliedOrFailure returns the view of an applied (or still applying) change, and throws a tool
 * error for one whose apply failed, carrying the status, the reason and the change, so that a
 * client that only checks `isError` knows.
 */
export function appliedOrFailure(c: Change | undefined, publicUrl: string): Record<string, unknown> {
  const view = changeView(c, publicUrl);
  if (view.status === 'failed') {
    throw new ToolFailure(
      'apply_failed',
      `the change was not applied: ${String(view.error ?? 'no reason given')}`,
      {
        status: 'failed',
        change: view,
      },
    );
  }
  return view;
}
