/**
 * The HTTP client to the ad platform. Every call is bounded in time and response size, follows
 * no redirect (a credential is never sent anywhere but the configured platform), and its
 * response is treated as untrusted input: parsed defensively and checked for shape.
 */

import { isUtf8 } from 'node:buffer';
import type { IncomingHttpHeaders } from 'node:http';
import { isRecord } from '@adsmcp/runtime/json';
import { injectTraceContext, inSpan, markFailed, SpanKind } from '@adsmcp/runtime/telemetry';
import { Agent, type Dispatcher } from 'undici';
import type { PlatformAccount } from '../domain/connection.ts';

export const DEFAULT_TIMEOUT_MS = 10_000;
/**
 * The largest answer read (8 MiB): an insights page of 2000 rows with every metric and long
 * entity names, the largest page the tools ask for, fits.
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024;

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
  | 'http_status'
  /** The caller gave up (its signal aborted) before the platform answered. */
  | 'cancelled';

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

/** One request to the platform, already validated (see domain/platform-call.ts). */
export interface PlatformRequest {
  method: 'GET' | 'POST';
  /** A path beneath the base URL, starting with "/". */
  path: string;
  query: readonly { name: string; value: string }[];
  /** JSON text, for a POST. */
  body?: string | undefined;
  /**
   * A file to upload instead of JSON (`POST /files`): its bytes, sent as they are with its
   * Content-Type. Never logged nor put on a span; only its method and path are.
   */
  file?: { bytes: Uint8Array; contentType: string } | undefined;
  /** Sent as the Idempotency-Key header. */
  idempotencyKey?: string | undefined;
  /** Sent as x-request-id, so the platform's logs can be matched with ours. */
  requestId?: string | undefined;
}

/** The platform's answer to one request. */
export interface PlatformReply {
  status: number;
  /** The Retry-After header as sent, if any. */
  retryAfter: string | null;
  /**
   * For a 2xx or 4xx answer (but 429): its body, checked to be a JSON object or array, or empty.
   * Empty for any other status, whose body is discarded unread.
   */
  bodyJson: string;
}

export interface PlatformClient {
  /** getMe returns the ad account `credential` belongs to (`GET /me`). */
  getMe(credential: string, signal?: AbortSignal): Promise<PlatformAccount>;
  /**
   * send makes one request with `credential` and returns the platform's answer, whatever its
   * status; it throws a PlatformError when there is no usable answer (unreachable, timeout,
   * too large, unreadable, cancelled). It never retries: that is the caller's decision.
   */
  send(credential: string, request: PlatformRequest, signal?: AbortSignal): Promise<PlatformReply>;
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

/** One response header as a string (the first, when it was sent more than once), or null. */
function headerOf(headers: IncomingHttpHeaders, name: string): string | null {
  const v = headers[name];
  return v === undefined ? null : Array.isArray(v) ? (v[0] ?? null) : v;
}

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\b/i;
const UNREADABLE = 'the platform sent an unreadable response';

/** Whether the body of an answer with `status` is passed on to the caller. */
const bodyIsPassedOn = (status: number) =>
  (status >= 200 && status <= 299) || (status >= 400 && status <= 499 && status !== 429);

/** The text of a JSON object or array, or empty; anything else is unreadable. */
function jsonText(raw: Buffer, contentType: string | null): string {
  if (raw.length === 0) return '';
  if (!JSON_TYPE.test(contentType ?? '')) throw new PlatformError('bad_response', `${UNREADABLE} (not JSON)`);
  // Checked, then decoded: Buffer's decoding would replace invalid bytes instead of refusing them.
  if (!isUtf8(raw)) throw new PlatformError('bad_response', `${UNREADABLE} (malformed JSON)`);
  const text = raw.toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new PlatformError('bad_response', `${UNREADABLE} (malformed JSON)`);
  }
  if (typeof parsed !== 'object' || parsed === null) {
    throw new PlatformError('bad_response', `${UNREADABLE} (JSON that is not an object or array)`);
  }
  return text;
}

/**
 * The body passed on with an answer: a success's must be JSON (it is the result); a refusal's
 * (4xx) is passed on when it is JSON and dropped when it is not (a proxy's HTML 404 page), since
 * its status alone says what happened: a refusal is never an unreadable answer to try again.
 */
function answerText(status: number, raw: Buffer, contentType: string | null): string {
  if (status < 400) return jsonText(raw, contentType);
  try {
    return jsonText(raw, contentType);
  } catch (err) {
    if (err instanceof PlatformError) return '';
    throw err;
  }
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
  const account = { id: body.id, name: body.name, currency: body.currency, timeZone: body.time_zone };
  const credentialExpiresAt = expiryOf(body.credential_expires_at);
  return credentialExpiresAt === undefined ? account : { ...account, credentialExpiresAt };
}

/**
 * The credential's expiry the platform reported: an RFC 3339 instant, or undefined when it gave
 * none or something else. Not knowing it must not stop a connection: it is then shown as unknown.
 */
function expiryOf(v: unknown): Date | undefined {
  if (typeof v !== 'string' || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(v))
    return undefined;
  const at = new Date(v);
  return Number.isNaN(at.getTime()) ? undefined : at;
}

/**
 * tracedFetch sends one request to the platform in a client span, with the current trace's
 * `traceparent` among its headers (so a platform that traces joins the trace).
 */
function tracedFetch<R extends { status: number }>(
  method: string,
  path: string,
  headers: Record<string, string>,
  send: () => Promise<R>,
): Promise<R> {
  return inSpan(
    `upstream ${method}`,
    { kind: SpanKind.CLIENT, attributes: { 'http.request.method': method, 'url.path': path } },
    async (span) => {
      injectTraceContext(headers);
      const res = await send();
      span.setAttribute('http.response.status_code', res.status);
      if (res.status >= 500) markFailed(span, `HTTP ${res.status}`);
      return res;
    },
  );
}

/** An answer as it came: its status, headers and the body when it is passed on (else empty). */
interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  raw: Buffer;
}

/** How much of a body that is not passed on is read and dropped before its connection is closed instead. */
const DISCARD_BYTES = 128 * 1024;

/** The parts of one request to the platform that `exchange` sends. */
interface Exchange {
  agent: Dispatcher;
  url: URL;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body: string | Uint8Array | undefined;
  /** `METHOD /path`, for the messages. */
  what: string;
  timeoutMs: number;
  maxBytes: number;
}

/**
 * exchange sends one request on undici's dispatcher and collects its answer: the body of an
 * answer passed on up to `maxBytes`, any other read and dropped. It ends early, with a
 * PlatformError, when `outer` aborts (cancelled), after `timeoutMs` (timeout), when the body is too
 * large, or when the connection fails (unreachable).
 *
 * On the dispatcher's handler interface rather than undici's `request`: `request` gives every
 * answer a readable stream and an async iterator over it, and links an abort signal, which
 * together cost more CPU than the rest of a platform read in this service; a handler gets the
 * same headers and chunks directly. One timer and one listener on the caller's signal per call.
 */
function exchange(x: Exchange, outer: AbortSignal | undefined): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    const pending = new PendingExchange(x, outer, resolve, reject);
    if (outer?.aborted === true) {
      pending.handleEvent();
      return;
    }
    outer?.addEventListener('abort', pending, { once: true });
    x.agent.dispatch(
      {
        origin: x.url.origin,
        path: `${x.url.pathname}${x.url.search}`,
        method: x.method,
        headers: x.headers,
        // No redirect is followed: the dispatcher answers a redirect as it is.
        ...(x.body === undefined ? {} : { body: x.body }),
      },
      pending,
    );
  });
}

/** The timer callback of an exchange, taking it as an argument so that its timer costs no closure. */
function timeOut(pending: PendingExchange): void {
  pending.timeOut();
}

/**
 * One exchange in flight: the dispatcher's handler of its answer, and the listener of the caller's
 * signal (`handleEvent`). A class, so that its handler methods and listener are made once, not
 * per call.
 */
class PendingExchange implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  /** Why the request was stopped on this side, once it was. */
  private stoppedWith: PlatformError | undefined;
  private settled = false;
  private status = 0;
  private headers: IncomingHttpHeaders = {};
  private passedOn = false;
  private readonly chunks: Buffer[] = [];
  private received = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly x: Exchange,
    private readonly outer: AbortSignal | undefined,
    private readonly resolve: (answer: Answer) => void,
    private readonly reject: (err: PlatformError) => void,
  ) {
    this.timer = setTimeout(timeOut, x.timeoutMs, this);
  }

  private settle(outcome: Answer | PlatformError): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    this.outer?.removeEventListener('abort', this);
    if (outcome instanceof PlatformError) this.reject(outcome);
    else this.resolve(outcome);
  }

  /** Stops the request (now, or as soon as it is on a connection) and settles with `err`. */
  private stop(err: PlatformError): void {
    this.stoppedWith ??= err;
    // Settled first: the abort may report the broken connection at once, as unreachable.
    this.settle(err);
    if (this.controller !== undefined && !this.controller.aborted) this.controller.abort(err);
  }

  timeOut(): void {
    this.stop(
      new PlatformError(
        'timeout',
        `the platform did not answer ${this.x.what} within ${this.x.timeoutMs} ms`,
      ),
    );
  }

  /** The caller's signal aborted. */
  handleEvent(): void {
    this.stop(new PlatformError('cancelled', `the caller gave up on ${this.x.what}`));
  }

  onRequestStart(c: Dispatcher.DispatchController): void {
    this.controller = c;
    if (this.stoppedWith !== undefined) c.abort(this.stoppedWith);
  }

  onResponseStart(
    _c: Dispatcher.DispatchController,
    statusCode: number,
    responseHeaders: IncomingHttpHeaders,
  ): void {
    // An informational answer (1xx) comes before the real one.
    if (statusCode < 200) return;
    this.status = statusCode;
    this.headers = responseHeaders;
    this.passedOn = bodyIsPassedOn(statusCode);
    const declared = Number(headerOf(responseHeaders, 'content-length') ?? Number.NaN);
    if (this.passedOn && declared > this.x.maxBytes) {
      this.stop(
        new PlatformError(
          'too_large',
          `the platform's response (${declared} bytes) exceeds ${this.x.maxBytes} bytes`,
        ),
      );
    }
  }

  onResponseData(c: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) return;
    this.received += chunk.byteLength;
    if (!this.passedOn) {
      // Its status says what happened; a long body is not worth reading to keep the connection.
      if (this.received > DISCARD_BYTES) {
        this.settle({ status: this.status, headers: this.headers, raw: Buffer.alloc(0) });
        c.abort(new Error('discarded the rest of an answer whose body is not passed on'));
      }
      return;
    }
    if (this.received > this.x.maxBytes) {
      this.stop(new PlatformError('too_large', `the platform's response exceeds ${this.x.maxBytes} bytes`));
      return;
    }
    this.chunks.push(chunk);
  }

  onResponseEnd(): void {
    const { chunks } = this;
    const raw = !this.passedOn
      ? Buffer.alloc(0)
      : chunks.length === 1
        ? (chunks[0] as Buffer)
        : Buffer.concat(chunks, this.received);
    this.settle({ status: this.status, headers: this.headers, raw });
  }

  onResponseError(): void {
    this.settle(new PlatformError('unreachable', `the platform could not be reached for ${this.x.what}`));
  }
}

/**
 * The signal of one platform call: aborted when the caller's `outer` signal is, or when
 * `timeoutMs` have passed, until `done()` releases its timer and listener. One controller and one
 * timer per call: `AbortSignal.timeout` joined by `AbortSignal.any` did the same at about 35 µs of
 * CPU per call on Node 20, this at about 6 (measured in a loop of 200,000).
 */
function callSignal(outer: AbortSignal | undefined, timeoutMs: number) {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
  }, timeoutMs);
  const onAbort = () => controller.abort(outer?.reason);
  if (outer?.aborted === true) onAbort();
  else outer?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    done() {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onAbort);
    },
  };
}

/** What one client was created with, as its calls read it. */
interface ClientSettings {
  base: URL;
  timeoutMs: number;
  maxBytes: number;
  agent: Agent;
}

/** createPlatformClient returns a client of the platform at `opts.baseUrl`. */
export function createPlatformClient(opts: PlatformClientOptions): PlatformClient {
  const settings: ClientSettings = {
    base: new URL(opts.baseUrl.endsWith('/') ? opts.baseUrl : `${opts.baseUrl}/`),
    timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxBytes: opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    // Kept-alive connections to the platform (fetch's global dispatcher and its web streams cost
    // several times as much per request), as many as there are calls: the caller bounds each
    // account's calls in flight, and a bound here, shared by every account, would let one account
    // whose requests the platform answers slowly hold every connection while the others wait.
    agent: new Agent({ keepAliveTimeout: 10_000, pipelining: 1 }),
  };
  return {
    async getMe(credential, signal) {
      return parseAccount(await getJson(settings, 'me', credential, signal));
    },
    send(credential, request, signal) {
      return send(settings, credential, request, signal);
    },
  };
}

/** GETs `path` with `credential` and returns its parsed JSON body, for a 2xx answer only. */
async function getJson(
  settings: ClientSettings,
  path: string,
  credential: string,
  signal: AbortSignal | undefined,
): Promise<unknown> {
  const { timeoutMs } = settings;
  const what = `GET /${path}`;
  const call = callSignal(signal, timeoutMs);
  let res: Response;
  let raw: Buffer;
  try {
    res = await fetch(new URL(path, settings.base), {
      method: 'GET',
      headers: { authorization: `Bearer ${credential}`, accept: 'application/json' },
      // A redirect is answered as it is, never followed: the credential goes to the platform only.
      redirect: 'manual',
      signal: call.signal,
    });
    raw = await readCapped(res, settings.maxBytes);
  } catch (err) {
    if (err instanceof PlatformError) throw err;
    if (call.timedOut()) {
      throw new PlatformError('timeout', `the platform did not answer ${what} within ${timeoutMs} ms`);
    }
    throw new PlatformError('unreachable', `the platform could not be reached for ${what}`);
  } finally {
    call.done();
  }
  return parsedJson(res, raw, what);
}

/** The JSON body of a 2xx answer to `what`; any other answer is a PlatformError. */
function parsedJson(res: Response, raw: Buffer, what: string): unknown {
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

/** The URL of `path` beneath the base URL, refusing any that would leave it. */
function urlOf(base: URL, path: string, query: PlatformRequest['query']): URL {
  // "./" keeps a first segment with a colon (/a:b) from reading as a scheme.
  const url = new URL(`.${path}`, base);
  if (url.origin !== base.origin || !url.pathname.startsWith(base.pathname)) {
    throw new Error(`path ${path} resolves outside the platform's API`);
  }
  for (const { name, value } of query) url.searchParams.append(name, value);
  return url;
}

/** PlatformClient.send: one request with `credential`, its answer whatever its status. */
async function send(
  settings: ClientSettings,
  credential: string,
  request: PlatformRequest,
  signal: AbortSignal | undefined,
): Promise<PlatformReply> {
  const { agent, timeoutMs, maxBytes } = settings;
  const what = `${request.method} ${request.path}`;
  const url = urlOf(settings.base, request.path, request.query);
  const headers: Record<string, string> = {
    authorization: `Bearer ${credential}`,
    accept: 'application/json',
  };
  if (request.body !== undefined) headers['content-type'] = 'application/json';
  if (request.file !== undefined) headers['content-type'] = request.file.contentType;
  const body = request.file?.bytes ?? request.body;
  if (request.idempotencyKey !== undefined) headers['idempotency-key'] = request.idempotencyKey;
  if (request.requestId !== undefined) headers['x-request-id'] = request.requestId;
  const answer = await tracedFetch(request.method, request.path, headers, () =>
    exchange({ agent, url, method: request.method, headers, body, what, timeoutMs, maxBytes }, signal),
  );
  return {
    status: answer.status,
    retryAfter: headerOf(answer.headers, 'retry-after'),
    bodyJson: bodyIsPassedOn(answer.status)
      ? answerText(answer.status, answer.raw, headerOf(answer.headers, 'content-type'))
      : '',
  };
}
