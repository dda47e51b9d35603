import type { Queryable } from '@adsmcp/runtime/db';
import type { FileRecord, FileType } from '../files.ts';

interface FileRow {
  id: string;
  account_id: string;
  mime_type: FileType;
  byte_size: number;
  width: number;
  height: number;
  sha256: string;
  created_at: Date;
}

const COLUMNS = 'id, account_id, mime_type, byte_size, width, height, sha256, created_at';

const toFile = (r: FileRow): FileRecord => ({
  id: r.id,
  accountId: r.account_id,
  mimeType: r.mime_type,
  byteSize: r.byte_size,
  width: r.width,
  height: r.height,
  sha256: r.sha256,
  createdAt: r.created_at,
});

/**
 * insertFile records `f` unless the account already has a file with its id (the same bytes);
 * it returns the new file, or undefined when there was one. An upload of the same bytes running
 * at the same time waits for this one to commit and then finds it.
 */
export async function insertFile(db: Queryable, f: FileRecord): Promise<FileRecord | undefined> {
  const { rows } = await db.query<FileRow>(
    `INSERT INTO files (id, account_id, mime_type, byte_size, width, height, sha256, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (id) DO NOTHING
     RETURNING ${COLUMNS}`,
    [f.id, f.accountId, f.mimeType, f.byteSize, f.width, f.height, f.sha256, f.createdAt],
  );
  const row = rows[0];
  return row === undefined ? undefined : toFile(row);
}

/** findFile returns the file `id` of `accountId`, if it has one. */
export async function findFile(
  db: Queryable,
  accountId: string,
  id: string,
): Promise<FileRecord | undefined> {
  const { rows } = await db.query<FileRow>(`SELECT ${COLUMNS} FROM files WHERE account_id = $1 AND id = $2`, [
    accountId,
    id,
  ]);
  const row = rows[0];
  return row === undefined ? undefined : toFile(row);
}
