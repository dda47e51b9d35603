/**
 * A change as the API shows it (the ChangesService's `Change` message), and loading one by id
 * for a caller of the workspace.
 */
import {
  ChangeResolutionSchema,
  type ChangeSchema,
  ChangeStatusSchema,
} from '@adsmcp/proto/changes/v1/changes_pb';
import type { Pool } from '@adsmcp/runtime/db';
import { enumValue } from '@adsmcp/runtime/enum-words';
import { InvalidArgumentError, NotFoundError } from '@adsmcp/runtime/errors';
import { isUuid } from '@adsmcp/runtime/ids';
import type { Principal } from '@adsmcp/runtime/principal';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { type ExpiryHours, expiresAt, outcomeUnknown, shownStatus } from '../domain/change.ts';
import { type ChangeRow, findChange } from '../store/change-store.ts';
import { revertLinksOf } from '../store/revert-store.ts';

/** The statuses a change stays in once reached. */
export const TERMINAL = new Set(['applied', 'failed']);

/** The workspace's expiry settings, and the instant a change is read at. */
export interface ReadAt {
  expiry: ExpiryHours;
  now: Date;
}

/**
 * A column that may hold nothing, as an `optional` field: absent for NULL, and for an empty text
 * too, which the rows hold where nothing was said (no note, no error).
 */
function given<T>(v: T | null | undefined): Exclude<T, ''> | undefined {
  return v === null || v === undefined || v === '' ? undefined : (v as Exclude<T, ''>);
}

/** The change as the API shows it at `at`: past its expiry, a prepared or approved change is expired. */
export function toProto(r: ChangeRow, at: ReadAt): MessageInitShape<typeof ChangeSchema> {
  const iso = (d: Date | null | undefined) => d?.toISOString();
  return {
    changeId: r.change_id,
    accountId: r.account_id,
    tool: r.tool,
    state: enumValue(ChangeStatusSchema, shownStatus(r, at.expiry, at.now)),
    expiresAt: iso(expiresAt(r, at.expiry)),
    summary: r.summary,
    operation: { method: r.method, path: r.path, bodyJson: r.body_json },
    digest: r.digest,
    targetPath: r.target_path,
    targetBeforeJson: r.target_before_json,
    preparedBy: r.prepared_by,
    preparedAt: r.prepared_at.toISOString(),
    approvedBy: given(r.approved_by),
    approvedAt: iso(r.approved_at),
    rejectedBy: given(r.rejected_by),
    rejectedAt: iso(r.rejected_at),
    rejectReason: given(r.reject_reason),
    applyRequestedBy: given(r.apply_requested_by),
    applyRequestedAt: iso(r.apply_requested_at),
    applyRetriedBy: given(r.apply_retried_by),
    applyRetriedAt: iso(r.apply_retried_at),
    outcomeUnknown: outcomeUnknown(r),
    resolvedAs: r.resolution === null ? undefined : enumValue(ChangeResolutionSchema, r.resolution),
    resolvedBy: given(r.resolved_by),
    resolvedAt: iso(r.resolved_at),
    resolutionNote: given(r.resolution_note),
    appliedAt: iso(r.applied_at),
    upstreamStatus: given(r.upstream_status),
    upstreamResponseJson: given(r.upstream_response_json),
    error: given(r.error),
    standardsChecked: r.standards_checked.map((c) => ({
      standardId: c.standard_id,
      name: c.name,
      revision: c.revision,
      guidance: c.guidance,
    })),
    appliedDifferences: r.applied_differences,
    uploads: r.uploads.map((u) => ({
      assetId: u.asset_id,
      name: u.name,
      mimeType: u.mime_type,
      byteSize: u.byte_size,
      width: u.width,
      height: u.height,
      sha256: u.sha256,
      fileId: given(u.file_id),
    })),
    revertsChangeId: given(revertLinksOf(r).reverts_change_id),
    revertedBy: revertLinksOf(r).reverted_by,
  };
}

export async function load(pool: Pool, p: Principal, changeId: string): Promise<ChangeRow> {
  if (!isUuid(changeId)) throw new InvalidArgumentError('change_id must be a UUID');
  const row = await findChange(pool, p.workspaceId, changeId);
  if (row === undefined) throw new NotFoundError(`no change ${changeId} in this workspace`);
  return row;
}
