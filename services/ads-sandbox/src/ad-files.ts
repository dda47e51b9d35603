/**
 * An ad's image is a file of its account, as a real platform requires: the rule needs the
 * database, so it is checked in the mutation's transaction, after the body's shape. Shared by the
 * ad update route and bulk jobs' `create_ad`.
 */
import type { Queryable } from '@adsmcp/runtime/db';
import { invalidRequest } from './errors.ts';
import { findFile } from './store/file-store.ts';

const FIELD = 'creative.file_id';

/** requireFile refuses (400) a `creative.file_id` that names no file of `accountId` (another account's is none). */
export async function requireFile(db: Queryable, accountId: string, fileId: string): Promise<void> {
  if ((await findFile(db, accountId, fileId)) !== undefined) return;
  throw invalidRequest(
    FIELD,
    `${FIELD} ${fileId} is not a file of this account: upload the image with POST /files and use the file_id it answers`,
  );
}
