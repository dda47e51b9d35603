/**
 * A call to the ad platform as a caller asks for it, and the rules it must meet before it is
 * sent: only GET and POST, only a path beneath the platform's API (never a URL, never a way out
 * of it), and a mutation only with an idempotency key, so a retry can never apply it twice.
 * A few platform POSTs are reads with a body; they are treated as a GET is. One POST carries a
 * file instead of JSON: an image upload (`POST /files`), whose bytes go as they are.
 */
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { MAX_PLATFORM_BODY_BYTES } from '@adsmcp/runtime/platform-limits';

export type CallMethod = 'GET' | 'POST';

export interface QueryPair {
  name: string;
  value: string;
}

/** The types of file the platform takes (`POST /files`). */
export const FILE_TYPES = ['image/png', 'image/jpeg'] as const;
export type FileType = (typeof FILE_TYPES)[number];
/** The one path a file is uploaded to. */
export const UPLOAD_PATH = '/files';

/** A file to upload: its bytes, sent as they are with their Content-Type. */
export interface CallFile {
  bytes: Uint8Array;
  contentType: FileType;
}

/** A call that met every rule. */
export interface PlatformCall {
  method: CallMethod;
  /** Starts with one slash; percent-encoded; no query, fragment or dot segments. */
  path: string;
  query: readonly QueryPair[];
  /** The JSON object text of a POST; undefined for a GET and for a file upload. */
  body: string | undefined;
  /** The file of an upload (`POST /files`); undefined for every other call. */
  file: CallFile | undefined;
  /** Present exactly for a POST that changes something. */
  idempotencyKey: string | undefined;
  /**
   * The call changes nothing on the platform (a GET, or a read-only POST): it needs only the read
   * scope and is retried as a GET is.
   */
  readOnly: boolean;
}

/**
 * The platform's POST operations that only read: a report whose question is too large for a query
 * string. They change nothing, so the platform keeps no ledger for them and wants no idempotency key.
 */
export const READ_ONLY_POSTS: ReadonlySet<string> = new Set(['/conversions/insights']);

/** Whether `method` on `path` changes nothing on the platform. */
export function isReadOnly(method: CallMethod, path: string): boolean {
  return method === 'GET' || READ_ONLY_POSTS.has(path);
}

export interface CallInput {
  method: string;
  path: string;
  query: readonly QueryPair[];
  bodyJson: string;
  idempotencyKey: string;
  /** A file's bytes, for `POST /files` only; empty for every other call. */
  body: Uint8Array;
  /** The file's type, with `body` only. */
  contentType: string;
}

export const MAX_PATH_CHARS = 2048;
export const MAX_IDEMPOTENCY_KEY_CHARS = 255;
/** A list filter may name 500 ids (custom_audience_ids), each its own parameter, beside the paging. */
export const MAX_QUERY_PARAMS = 1000;
export const MAX_QUERY_NAME_CHARS = 256;
export const MAX_QUERY_VALUE_CHARS = 2048;
/** The largest file an upload carries (5 MiB), as the platform takes it. */
export const MAX_FILE_BYTES = 5 * 1024 * 1024;

/** Visible ASCII: what may travel in a request line or header unencoded. */
const VISIBLE_ASCII = /^[\x21-\x7e]+$/;
const PERCENT = /%(?![0-9A-Fa-f]{2})/;

function quoted(text: string): string {
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text);
}

function checkPath(path: string): void {
  if (path.length > MAX_PATH_CHARS) {
    throw new InvalidArgumentError(`path must be at most ${MAX_PATH_CHARS} characters (got ${path.length})`);
  }
  if (!path.startsWith('/')) {
    throw new InvalidArgumentError(
      `path must start with "/": a path on the platform such as /ads/123, never a URL (got ${quoted(path)})`,
    );
  }
  if (path.startsWith('//')) {
    throw new InvalidArgumentError(
      `path must not name a host: it may not start with "//" (got ${quoted(path)})`,
    );
  }
  if (path.includes('?') || path.includes('#')) {
    throw new InvalidArgumentError(
      `path must not contain "?" or "#": pass query parameters in query (got ${quoted(path)})`,
    );
  }
  if (!VISIBLE_ASCII.test(path) || path.includes('\\')) {
    throw new InvalidArgumentError(
      'path must be visible ASCII without "\\"; percent-encode anything else (as encodeURIComponent does)',
    );
  }
  if (PERCENT.test(path)) {
    throw new InvalidArgumentError(`path has a "%" that is not a percent-encoding (got ${quoted(path)})`);
  }
  for (const segment of path.slice(1).split('/')) {
    // Decoded, because a URL parser takes %2e%2e for ".." and %2F for another segment.
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      throw new InvalidArgumentError(`path has a malformed percent-encoding (got ${quoted(path)})`);
    }
    if (decoded === '..' || decoded === '.') {
      throw new InvalidArgumentError(`path must not contain ".." or "." segments (got ${quoted(path)})`);
    }
    if (decoded.includes('/') || decoded.includes('\\')) {
      throw new InvalidArgumentError(
        `path must not contain an encoded "/" or "\\" (%2F, %5C) (got ${quoted(path)})`,
      );
    }
  }
}

function checkQuery(query: readonly QueryPair[]): void {
  if (query.length > MAX_QUERY_PARAMS) {
    throw new InvalidArgumentError(
      `query must have at most ${MAX_QUERY_PARAMS} parameters (got ${query.length})`,
    );
  }
  for (const [i, { name, value }] of query.entries()) {
    if (name.length < 1 || name.length > MAX_QUERY_NAME_CHARS) {
      throw new InvalidArgumentError(`query[${i}].name must be 1 to ${MAX_QUERY_NAME_CHARS} characters`);
    }
    if (value.length > MAX_QUERY_VALUE_CHARS) {
      throw new InvalidArgumentError(`query[${i}].value must be at most ${MAX_QUERY_VALUE_CHARS} characters`);
    }
  }
}

function checkBody(method: CallMethod, bodyJson: string): string | undefined {
  if (method === 'GET') {
    if (bodyJson !== '') throw new InvalidArgumentError('body_json must be empty for GET');
    return undefined;
  }
  if (Buffer.byteLength(bodyJson, 'utf8') > MAX_PLATFORM_BODY_BYTES) {
    throw new InvalidArgumentError(`body_json must be at most ${MAX_PLATFORM_BODY_BYTES} bytes`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(bodyJson);
  } catch {
    throw new InvalidArgumentError(
      'body_json must be the text of a JSON object for POST ({} for none); it is not JSON',
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new InvalidArgumentError(
      `body_json must be the text of a JSON object for POST ({} for none) (got ${Array.isArray(parsed) ? 'an array' : parsed === null ? 'null' : typeof parsed})`,
    );
  }
  return bodyJson;
}

/**
 * checkFile checks an upload's file fields and returns the file, or undefined for a call that
 * carries none. A file goes only to `POST /files`, with one of the platform's image types and
 * no JSON; and `POST /files` takes nothing else, so it is refused without one.
 */
function checkFile(input: CallInput, method: CallMethod): CallFile | undefined {
  const { body, contentType } = input;
  const upload = method === 'POST' && input.path === UPLOAD_PATH;
  if (body.length === 0) {
    if (upload) {
      throw new InvalidArgumentError(
        `body is required for POST ${UPLOAD_PATH}: the file's bytes, with content_type image/png or image/jpeg (body_json is not used)`,
      );
    }
    if (contentType !== '') {
      throw new InvalidArgumentError(
        `content_type is only for a file upload (POST ${UPLOAD_PATH}) with its bytes in body; leave it empty (got ${quoted(contentType)})`,
      );
    }
    return undefined;
  }
  if (!upload) {
    throw new InvalidArgumentError(
      `body (a file's bytes) is only for POST ${UPLOAD_PATH}; send JSON in body_json (got a body for ${method} ${quoted(input.path)})`,
    );
  }
  if (body.length > MAX_FILE_BYTES) {
    throw new InvalidArgumentError(
      `body must be at most ${MAX_FILE_BYTES} bytes (5 MiB) (got ${body.length})`,
    );
  }
  const type = FILE_TYPES.find((t) => t === contentType);
  if (type === undefined) {
    throw new InvalidArgumentError(
      `content_type must be image/png or image/jpeg for a file upload (POST ${UPLOAD_PATH}) (got ${contentType === '' ? 'none' : quoted(contentType)})`,
    );
  }
  if (input.bodyJson !== '') {
    throw new InvalidArgumentError(
      `body_json must be empty for a file upload (POST ${UPLOAD_PATH}): the file's bytes go in body`,
    );
  }
  return { bytes: body, contentType: type };
}

function checkIdempotencyKey(method: CallMethod, path: string, key: string): string | undefined {
  if (method === 'GET') {
    if (key !== '')
      throw new InvalidArgumentError('idempotency_key is only for POST; leave it empty for GET');
    return undefined;
  }
  if (READ_ONLY_POSTS.has(path)) {
    if (key !== '') {
      throw new InvalidArgumentError(
        `idempotency_key must be empty for POST ${path}: it is a read, which changes nothing to replay`,
      );
    }
    return undefined;
  }
  if (key === '') {
    throw new InvalidArgumentError(
      'idempotency_key is required for POST: with it the platform replays a repeated call instead of applying it twice',
    );
  }
  if (key.length > MAX_IDEMPOTENCY_KEY_CHARS) {
    throw new InvalidArgumentError(
      `idempotency_key must be at most ${MAX_IDEMPOTENCY_KEY_CHARS} characters (got ${key.length})`,
    );
  }
  if (!VISIBLE_ASCII.test(key)) {
    throw new InvalidArgumentError(
      'idempotency_key must be visible ASCII characters: it travels in a header',
    );
  }
  return key;
}

/** validateCall checks a requested call; it throws an InvalidArgumentError naming the first rule it breaks. */
export function validateCall(input: CallInput): PlatformCall {
  const { method } = input;
  if (method !== 'GET' && method !== 'POST') {
    throw new InvalidArgumentError(`method must be GET or POST (got ${quoted(method)})`);
  }
  checkPath(input.path);
  checkQuery(input.query);
  const file = checkFile(input, method);
  const body = file === undefined ? checkBody(method, input.bodyJson) : undefined;
  // An upload is a mutation as any other POST: it needs its key, so a retry replays it.
  const idempotencyKey = checkIdempotencyKey(method, input.path, input.idempotencyKey);
  return {
    method,
    path: input.path,
    query: input.query,
    body,
    file,
    idempotencyKey,
    readOnly: isReadOnly(method, input.path),
  };
}
