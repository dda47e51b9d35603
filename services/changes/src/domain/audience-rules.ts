/**
 * The rules of custom audiences: a replace names the revision it was prepared against, so a member
 * file is never applied over a change someone else made meanwhile; a merge makes a new audience
 * from at least one source.
 */
import { FailedPreconditionError, InvalidArgumentError } from '@adsmcp/runtime/errors';

type Fields = Record<string, unknown>;

/** checkMerge refuses a merge the platform would refuse, for the new audience it would make. */
export function checkMerge(body: Fields): void {
  const ids = body.custom_audience_ids;
  if (!Array.isArray(ids) || ids.length === 0) {
    throw new InvalidArgumentError('`body.custom_audience_ids` must name at least one audience to merge');
  }
}

/**
 * checkReplace refuses a replace of members against a revision other than the audience's current
 * one, naming it, and says what replaces the members.
 */
export function checkReplace(live: Fields, body: Fields): string {
  const expected = body.expected_revision;
  const current = JSON.stringify(live.revision);
  if (expected !== live.revision) {
    throw new FailedPreconditionError(
      `\`body.expected_revision\` ${JSON.stringify(expected)} is stale: custom audience "${String(live.name)}" (${String(live.id)}) is at revision ${current}; ` +
        `prepare the replace again with expected_revision ${current} if its members should still be replaced`,
    );
  }
  const about = [
    body.filename,
    body.identifier_type === undefined ? undefined : `${body.identifier_type} identifiers`,
  ]
    .filter((x) => typeof x === 'string')
    .join(', ');
  return `file ${String(body.file_id)}${about === '' ? '' : ` (${about})`}; revision ${current}`;
}
