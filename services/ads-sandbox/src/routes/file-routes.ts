/**
 * The platform's file endpoints: upload an image (`POST /files`, the raw bytes as the request
 * body) and read what was uploaded (`GET /files/{file_id}`). See files.ts for the rules.
 */
import type { Pool } from '@adsmcp/runtime/db';
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { type RawQuery, refuseQuery } from '../ad-requests.ts';
import { invalidRequest, notFound } from '../errors.ts';
import {
  FILE_FIELD,
  FILE_TYPES,
  type FileRecord,
  type FileType,
  fileIdOf,
  fileJson,
  fileTooLarge,
  inspectImage,
  MAX_FILE_BYTES,
  unsupportedFileType,
} from '../files.ts';
import { sha256Hex } from '../ids.ts';
import { answerMutation } from '../mutation-route.ts';
import { requestAccount } from '../platform.ts';
import { findFile, insertFile } from '../store/file-store.ts';

export interface FileRouteDeps {
  pool: Pool;
  /** The platform guard (authentication, rate limit, faults). */
  guard: (req: FastifyRequest) => Promise<void>;
  /** The sandbox clock (ms since the epoch): a file's creation time. */
  now: () => number;
}

type FileParams = { Params: { file_id: string }; Querystring: RawQuery };
type UploadRequest = { Body: Buffer | undefined; Querystring: RawQuery };

/** The declared type of an upload: the media type of its Content-Type, without parameters. */
function declaredType(header: string | undefined): FileType {
  const type = header?.split(';')[0]?.trim().toLowerCase();
  const known = FILE_TYPES.find((t) => t === type);
  if (known === undefined) throw unsupportedFileType(header);
  return known;
}

/**
 * The upload's refusals by Fastify itself, before the handler, in the platform's words: a body of
 * a type no parser here takes (415) and one over the limit (413), each naming what it is about.
 * Anything else, and these once rewritten, goes on to the server's error handler.
 */
async function uploadErrorHandler(err: FastifyError, req: FastifyRequest): Promise<never> {
  if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') throw unsupportedFileType(req.headers['content-type']);
  if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') throw fileTooLarge();
  throw err;
}

/** registerFileRoutes adds `POST /files` and `GET /files/{file_id}` to `app`. */
export function registerFileRoutes(app: FastifyInstance, deps: FileRouteDeps): void {
  const { pool, guard, now } = deps;

  app.get<FileParams>('/files/:file_id', { onRequest: guard }, async (req) => {
    const account = requestAccount(req);
    refuseQuery(req.query);
    const file = await findFile(pool, account.id, req.params.file_id);
    if (file === undefined) throw notFound(`no file ${req.params.file_id} in this account`);
    return fileJson(file);
  });

  // The upload has a scope of its own: only here is a body taken as raw image bytes (and no JSON),
  // and only here may it be 5 MiB; every other route keeps the server's JSON parser and 1 MiB.
  app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      [...FILE_TYPES],
      { parseAs: 'buffer', bodyLimit: MAX_FILE_BYTES },
      (_req, body, done) => done(null, body),
    );

    /**
     * Answers 201 with a new file, or 200 with the file the account already has for the same
     * bytes (its id and created_at unchanged). The ledger records the upload as its type, size
     * and SHA-256, so an Idempotency-Key reused with other bytes is refused (422).
     */
    scope.post<UploadRequest>(
      '/files',
      { onRequest: guard, bodyLimit: MAX_FILE_BYTES, errorHandler: uploadErrorHandler },
      async (req, reply) => {
        refuseQuery(req.query);
        const mimeType = declaredType(req.headers['content-type']);
        const bytes = req.body;
        if (!Buffer.isBuffer(bytes)) throw unsupportedFileType(req.headers['content-type']);
        if (bytes.length === 0) {
          throw invalidRequest(FILE_FIELD, "the file is empty: send the image's bytes as the request body");
        }
        const accountId = requestAccount(req).id;
        const sha256 = sha256Hex(bytes);
        // Before the transaction: decoding takes a while and needs no connection.
        const { width, height } = await inspectImage(bytes, mimeType);
        const recorded = { content_type: mimeType, byte_size: bytes.length, sha256 };
        return answerMutation(pool, req, reply, recorded, async (client) => {
          const file: FileRecord = {
            id: fileIdOf(accountId, sha256),
            accountId,
            mimeType,
            byteSize: bytes.length,
            width,
            height,
            sha256,
            createdAt: new Date(now()),
          };
          const created = await insertFile(client, file);
          if (created !== undefined) return { status: 201, body: fileJson(created) };
          const existing = await findFile(client, accountId, file.id);
          if (existing === undefined) throw new Error(`file ${file.id} conflicted but cannot be found`);
          return { status: 200, body: fileJson(existing) };
        });
      },
    );
  });
}
