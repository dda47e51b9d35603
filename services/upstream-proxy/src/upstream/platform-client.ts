/**
 * The HTTP client to the ad platform. Every call is bounded in time and response size, follows
 * no redirect (a credential is never sent anywhere but the configured platform), and its
 * response is treated as untrusted input: parsed defensively and checked for shape.
 */
import type { PlatformAccount } from '../domain/connection.ts';

export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;

export type PlatformErrorKind =
  /** The platform refused the credential (401 or 403). */
  | 'unauthorized'
  /** No connection to the platform, or it broke off. */
  | 'unreachable'
  | 'timeout'
  /** The response was larger than the cap. */
  | 'too_large'
  /** The response was not the JSON of the expected shape. */
  | 'bad_response'
  /** Any other non-2xx status. */
  | 'http_status';

/** A platform call that did not produce a usable answer. The message never carries the credential. */
export class PlatformError extends Error {
  override name = 'PlatformError';
  constructor(
    readonly kind: PlatformErrorKind,
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

export interface PlatformClientOptions {
  /** The platform's API base URL; paths are resolved beneath it. */
  baseUrl: string;
  timeoutMs?: number;
  maxResponseBytes?: number;
}

export interface PlatformClient {
  /** getMe returns the ad account `credential` belongs to (`GET /me`). */
  getMe(credential: string, signal?: AbortSignal): Promise<PlatformAccount>;
}

/** Reads a response body, refusing it as soon as it exceeds `max` bytes. */
async function readCapped(res: Response, max: number): Promise<Buffer> {
  const declared = Number(res.headers.get('content-length') ?? Number.NaN);
  if (declared > max) {
    await res.body?.cancel();
    throw new PlatformError('too_large', `the platform's response (${declared} bytes) exceeds ${max} bytes`);
  }
  if (res.body === null) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel();
      throw new PlatformError('too_large', `the platform's response exceeds ${max} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const boundedString = (v: unknown, max: number): v is string =>
  typeof v === 'string' && v.length > 0 && v.length <= max;

/** parseAccount checks the shape of `GET /me`'s answer. */
function parseAccount(body: unknown): PlatformAccount {
  if (
    !isRecord(body) ||
    !boundedString(body.id, 255) ||
    !boundedString(body.name, 1000) ||
    typeof body.currency !== 'string' ||
    !/^[A-Z]{3}$/.test(body.currency) ||
    !boundedString(body.time_zone, 100)
  ) {
    throw new PlatformError('bad_response', 'the platform answered GET /me with an unexpected shape');
  }
  return { id: body.id, name: body.name, currency: body.currency, timeZone: body.time_zone };
}

/** createPlatformClient returns a client of the platform at `opts.baseUrl`. */
export function createPlatformClient(opts: PlatformClientOptions): PlatformClient {
  const base = new URL(opts.baseUrl.endsWith('/') ? opts.baseUrl : `${opts.baseUrl}/`);
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBytes = opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;

  /** GETs `path` with `credential` and returns its parsed JSON body, for a 2xx answer only. */
  async function getJson(
    path: string,
    credential: string,
    signal: AbortSignal | undefined,
  ): Promise<unknown> {
    const what = `GET /${path}`;
    const timeout = AbortSignal.timeout(timeoutMs);
    let res: Response;
    let raw: Buffer;
    try {
      res = await fetch(new URL(path, base), {
        method: 'GET',
        headers: { authorization: `Bearer ${credential}`, accept: 'application/json' },
        // A redirect is answered as it is, never followed: the credential goes to the platform only.
        redirect: 'manual',
        signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
      });
      raw = await readCapped(res, maxBytes);
    } catch (err) {
      if (err instanceof PlatformError) throw err;
      if (timeout.aborted) {
        throw new PlatformError('timeout', `the platform did not answer ${what} within ${timeoutMs} ms`);
      }
      throw new PlatformError('unreachable', `the platform could not be reached for ${what}`);
    }
    if (res.status === 401 || res.status === 403) {
      throw new PlatformError(
        'unauthorized',
        `the platform refused the credential (HTTP ${res.status})`,
        res.status,
      );
    }
    if (res.status < 200 || res.status > 299) {
      throw new PlatformError(
        'http_status',
        `the platform answered ${what} with HTTP ${res.status}`,
        res.status,
      );
    }
    if (!/^application\/(?:[\w.+-]+\+)?json\b/i.test(res.headers.get('content-type') ?? '')) {
      throw new PlatformError('bad_response', `the platform answered ${what} with something other than JSON`);
    }
    try {
      return JSON.parse(raw.toString('utf8')) as unknown;
    } catch {
      throw new PlatformError('bad_response', `the platform answered ${what} with malformed JSON`);
    }
  }

  return {
    async getMe(credential, signal) {
      return parseAccount(await getJson('me', credential, signal));
    },
  };
}
