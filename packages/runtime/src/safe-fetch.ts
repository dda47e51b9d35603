/**
 * The one way the product reads a remote URL (competitor pages, asset source URLs, later OAuth
 * client metadata): a server-side request forgery guard in front of undici.
 *
 * - `https` only, no user name or password in the URL, no cookies or credentials sent.
 * - The host name is resolved once; every address it resolves to must be an ordinary public
 *   unicast address (ipaddr.js range names decide, see refusedRange). IPv6 forms that carry an
 *   IPv4 address (mapped, compatible, NAT64, 6to4) are judged by the IPv4 address they carry.
 * - The connection goes to the address that was checked: the dispatcher's `lookup` hands back
 *   that address, so there is no second lookup for DNS rebinding to slip through.
 * - Redirects are followed by hand (at most MAX_REDIRECTS) and every hop is checked again.
 * - Connect time, total time and response size are bounded; the body is streamed and the read is
 *   aborted as soon as it passes maxBytes.
 *
 * There is no environment variable or configuration that turns the guard off. The options
 * `resolve`, `ca` and `allowAddress` exist so that tests can reach a local HTTPS server; the
 * product creates its fetcher with `createSafeFetcher()` and never passes `allowAddress`. The one
 * exception an operator may make is `allowHosts`: exact `host:port` pairs (the webhook sender's
 * WEBHOOK_ALLOW_HOSTS) reached over plain http at whatever address they are, for a receiver on the
 * developer's own machine; every other URL keeps every rule.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, request } from 'undici';

export const DEFAULT_MAX_BYTES = 1024 * 1024;
export const MAX_REDIRECTS = 5;
const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
const DEFAULT_TOTAL_TIMEOUT_MS = 15_000;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const USER_AGENT = 'adsmcp-fetcher/1.0 (+public page check)';

export type SafeFetchReason =
  | 'invalid_url'
  | 'scheme_not_allowed'
  | 'host_refused'
  | 'address_refused'
  | 'resolve_failed'
  | 'too_many_redirects'
  | 'bad_redirect'
  | 'too_large'
  | 'timeout'
  | 'cancelled'
  | 'network_error';

/** A refused or failed fetch; `reason` is stable for code, `message` is for a person. */
export class SafeFetchError extends Error {
  constructor(
    readonly reason: SafeFetchReason,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'SafeFetchError';
  }
}

export interface SafeFetchResponse {
  status: number;
  /** The URL of the final response, after redirects. */
  url: string;
  headers: Record<string, string>;
  body: Buffer;
  contentType: string | undefined;
}

export interface SafeFetchOptions {
  /** Resolves a host name to its addresses; the default asks the system resolver once. */
  resolve?: (hostname: string) => Promise<string[]>;
  /** Extra trusted CA certificates (PEM), for a test's self-signed server. */
  ca?: string | string[];
  /**
   * Tests only: lets an address the policy refuses through (a test server on 127.0.0.1). The
   * product never passes it; nothing reads it from the environment or configuration.
   */
  allowAddress?: (address: string) => boolean;
  connectTimeoutMs?: number;
  totalTimeoutMs?: number;
  /** Default maximum body size, overridable per call. */
  maxBytes?: number;
  /**
   * Exact `host:port` pairs (as URL.host spells them, port included) an operator allowed for local
   * development: these may use plain http and any address. Nothing else is relaxed.
   */
  allowHosts?: readonly string[];
}

export interface SafeFetchCallOptions {
  maxBytes?: number;
  accept?: string;
  /**
   * The caller's signal (a request's, ended when it is cancelled or its deadline passes): once it
   * is aborted the fetch stops, its connection closed, and fails as `cancelled`.
   */
  signal?: AbortSignal;
  /** GET by default; a POST sends `body` and is never redirected (a 3xx is its answer). */
  method?: 'GET' | 'POST';
  body?: string;
  /** Extra request headers (a webhook's content type and signature). */
  headers?: Record<string, string>;
  /**
   * The status and headers are all the caller reads (a webhook receiver's acknowledgement): the
   * body is dropped unread, so a large or slow one does not turn an answer into a failure, and
   * the response's `body` is empty.
   */
  statusOnly?: boolean;
}

export type SafeFetch = (url: string, opts?: SafeFetchCallOptions) => Promise<SafeFetchResponse>;

/**
 * Cloud metadata endpoints that are not in a special-purpose range by themselves (the others,
 * 169.254.169.254, fd00:ec2::254, 100.100.100.200, 192.0.0.192, are link-local, unique-local,
 * carrier-grade NAT and reserved, and refused as such).
 */
const METADATA_ADDRESSES = ['168.63.129.16'].map((a) => ipaddr.parse(a).toString());

/** IPv4-compatible IPv6 (::a.b.c.d, deprecated by RFC 4291) has no range name in ipaddr.js. */
const IPV4_COMPATIBLE = ipaddr.IPv6.parseCIDR('::/96');
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR('64:ff9b::/96');

const RANGE_WORDS: Record<string, string> = {
  loopback: 'a loopback',
  private: 'a private',
  linkLocal: 'a link-local',
  uniqueLocal: 'a unique-local',
  multicast: 'a multicast',
  unspecified: 'an unspecified',
  carrierGradeNat: 'a carrier-grade NAT',
  broadcast: 'a broadcast',
  reserved: 'a reserved',
  metadata: 'a cloud metadata',
};

/** The IPv4 address an IPv6 translation form carries, when it is one of those forms. */
function embeddedIPv4(addr: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const range = addr.range();
  const bytes = addr.toByteArray();
  const v4 = (at: number) => new ipaddr.IPv4(bytes.slice(at, at + 4));
  if (range === 'ipv4Mapped' || range === 'rfc6145') return v4(12);
  // NAT64: the well-known /96 prefix carries it in the last 32 bits; the local-use /48 prefix
  // (RFC 8215) places it by the operator's choice, so it stays refused by its range name.
  if (range === 'rfc6052' && addr.match(NAT64_WELL_KNOWN)) return v4(12);
  if (range === '6to4') return v4(2);
  if (addr.match(IPV4_COMPATIBLE) && range !== 'unspecified' && range !== 'loopback') return v4(12);
  return undefined;
}

/**
 * refusedRange names why an address may not be fetched from, or returns undefined for an
 * ordinary public unicast address. Anything ipaddr.js puts in a named range is refused; an IPv6
 * translation form is judged by the IPv4 address inside it; Teredo is refused outright, as its
 * embedded address is obfuscated and it tunnels to whatever that is.
 */
export function refusedRange(address: string): string | undefined {
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.parse(address);
  } catch {
    return 'unparseable';
  }
  if (METADATA_ADDRESSES.includes(addr.toString())) return 'metadata';
  if (addr.kind() === 'ipv6') {
    const inner = embeddedIPv4(addr as ipaddr.IPv6);
    if (inner) return refusedRange(inner.toString());
  }
  const range = addr.range();
  return range === 'unicast' ? undefined : range;
}

function describeRange(range: string): string {
  return RANGE_WORDS[range] ?? `a special-purpose (${range})`;
}

/** `localhost` and its subdomains are loopback by definition (RFC 6761), whatever DNS says. */
function isLocalhostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

async function systemResolve(hostname: string): Promise<string[]> {
  const found = await dnsLookup(hostname, { all: true, verbatim: true });
  return found.map((f) => f.address);
}

function parseHttpsUrl(raw: string, allowedHost: (url: URL) => boolean = () => false): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new SafeFetchError(
      'invalid_url',
      `url is not a valid absolute URL: ${JSON.stringify(raw.slice(0, 200))}`,
    );
  }
  const plainAllowed = url.protocol === 'http:' && allowedHost(url);
  if (url.protocol !== 'https:' && !plainAllowed) {
    throw new SafeFetchError('scheme_not_allowed', 'url must use https');
  }
  if (url.username || url.password) {
    throw new SafeFetchError('invalid_url', 'url must not contain a user name or password');
  }
  return url;
}

interface Policy {
  resolve: (hostname: string) => Promise<string[]>;
  allowAddress: (address: string) => boolean;
  allowedHost: (url: URL) => boolean;
}

/**
 * checkedAddress resolves the URL's host once (an IP literal, in any spelling WHATWG URL
 * normalises, is used as it is) and returns the address to connect to, or throws when any
 * address the name resolves to is refused.
 */
async function checkedAddress(url: URL, policy: Policy): Promise<string> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const operatorAllowed = policy.allowedHost(url);
  if (isIP(host) === 0 && isLocalhostName(host) && !operatorAllowed) {
    throw new SafeFetchError('host_refused', `the host ${host} is a loopback name`);
  }
  let addresses: string[];
  if (isIP(host) !== 0) {
    addresses = [host];
  } else {
    try {
      addresses = await policy.resolve(host);
    } catch (err) {
      throw new SafeFetchError('resolve_failed', `the host ${host} could not be resolved`, { cause: err });
    }
    if (addresses.length === 0) throw new SafeFetchError('resolve_failed', `the host ${host} has no address`);
  }
  for (const address of addresses) {
    const range = refusedRange(address);
    if (range !== undefined && !policy.allowAddress(address) && !operatorAllowed) {
      throw new SafeFetchError(
        'address_refused',
        `the host resolves to ${describeRange(range)} address (${address})`,
      );
    }
  }
  return addresses[0] as string;
}

/**
 * checkUrl applies the fetcher's rules to a URL without fetching it (a webhook's URL when it is
 * registered): it throws the SafeFetchError a fetch would, or returns the parsed URL.
 */
export async function checkUrl(
  raw: string,
  options: Pick<SafeFetchOptions, 'resolve' | 'allowHosts'> = {},
): Promise<URL> {
  const allowHosts = new Set((options.allowHosts ?? []).map((h) => h.toLowerCase()));
  const allowedHost = (url: URL) => allowHosts.has(url.host.toLowerCase());
  const url = parseHttpsUrl(raw, allowedHost);
  await checkedAddress(url, {
    resolve: options.resolve ?? systemResolve,
    allowAddress: () => false,
    allowedHost,
  });
  return url;
}

/** A lookup that answers only for the checked host, with the checked address. */
function pinnedLookup(hostname: string, address: string): LookupFunction {
  const family = isIP(address);
  return (name, options, callback) => {
    if (name !== hostname) {
      callback(new Error(`refusing a lookup of ${name}: only ${hostname} was checked`), '', 0);
      return;
    }
    if (options.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
}

function flatHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

interface Body extends AsyncIterable<Buffer> {
  destroy(): void;
  on(event: 'error', listener: (err: Error) => void): unknown;
}

/** Drops a body that will not be read; destroying it emits an abort error nobody needs. */
function discard(body: Body): void {
  body.on('error', () => {});
  body.destroy();
}

async function readBounded(body: Body, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > maxBytes) {
      discard(body);
      throw new SafeFetchError('too_large', `response larger than ${maxBytes} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

interface Hop {
  status: number;
  headers: Record<string, string>;
  body: Buffer | undefined;
}

/** What one fetcher was created with, as its hops read it. */
interface FetcherSettings {
  policy: Policy;
  connectTimeout: number;
  totalTimeout: number;
  options: SafeFetchOptions;
}

/** One request to the checked address of `url`: a redirect comes back without a body. */
async function hop(
  settings: FetcherSettings,
  url: URL,
  accept: string,
  maxBytes: number,
  signal: AbortSignal,
  opts: SafeFetchCallOptions,
): Promise<Hop> {
  const address = await checkedAddress(url, settings.policy);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const agent = new Agent({
    connect: {
      timeout: settings.connectTimeout,
      lookup: pinnedLookup(host, address),
      ...(settings.options.ca ? { ca: settings.options.ca } : {}),
    },
    headersTimeout: settings.totalTimeout,
    bodyTimeout: settings.totalTimeout,
  });
  try {
    const res = await request(url, {
      method: opts.method ?? 'GET',
      dispatcher: agent,
      signal,
      ...(opts.body === undefined ? {} : { body: opts.body }),
      headers: { ...opts.headers, accept, 'accept-encoding': 'identity', 'user-agent': USER_AGENT },
    });
    const headers = flatHeaders(res.headers);
    if (REDIRECT_STATUSES.has(res.statusCode) && (opts.method ?? 'GET') === 'GET') {
      discard(res.body);
      return { status: res.statusCode, headers, body: undefined };
    }
    if (opts.statusOnly === true) {
      discard(res.body);
      return { status: res.statusCode, headers, body: Buffer.alloc(0) };
    }
    const declared = Number(headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBytes) {
      discard(res.body);
      throw new SafeFetchError('too_large', `response larger than ${maxBytes} bytes`);
    }
    return { status: res.statusCode, headers, body: await readBounded(res.body, maxBytes) };
  } finally {
    await agent.destroy();
  }
}

/** The URL a redirect answer points to, checked as the first one was. */
function redirectTarget(res: Hop, url: URL, policy: Policy): URL {
  const location = res.headers.location;
  if (!location) throw new SafeFetchError('bad_redirect', `redirect (HTTP ${res.status}) without a Location`);
  let next: string;
  try {
    next = new URL(location, url).toString();
  } catch {
    throw new SafeFetchError(
      'bad_redirect',
      `redirect to an invalid URL: ${JSON.stringify(location.slice(0, 200))}`,
    );
  }
  return parseHttpsUrl(next, policy.allowedHost);
}

/** Fetches `start`, following at most MAX_REDIRECTS redirects, each hop checked again. */
async function follow(
  settings: FetcherSettings,
  start: string,
  opts: SafeFetchCallOptions,
  signal: AbortSignal,
): Promise<SafeFetchResponse> {
  const maxBytes = opts.maxBytes ?? settings.options.maxBytes ?? DEFAULT_MAX_BYTES;
  const accept = opts.accept ?? '*/*';
  let url = parseHttpsUrl(start, settings.policy.allowedHost);
  for (let redirects = 0; ; redirects++) {
    const res = await hop(settings, url, accept, maxBytes, signal, opts);
    if (res.body !== undefined) {
      return {
        status: res.status,
        url: url.toString(),
        headers: res.headers,
        body: res.body,
        contentType: res.headers['content-type'],
      };
    }
    if (redirects >= MAX_REDIRECTS) {
      throw new SafeFetchError('too_many_redirects', `more than ${MAX_REDIRECTS} redirects`);
    }
    url = redirectTarget(res, url, settings.policy);
  }
}

function cancelled(cause?: unknown): SafeFetchError {
  return new SafeFetchError(
    'cancelled',
    'the fetch was stopped: the call that asked for it was cancelled or ran out of time',
    {
      cause,
    },
  );
}

/** The SafeFetchError a failed fetch throws: the caller's cancel, the total timeout, or the failure itself. */
function fetchFailure(
  err: unknown,
  caller: AbortSignal | undefined,
  signal: AbortSignal,
  totalTimeout: number,
): SafeFetchError {
  if (caller?.aborted) return cancelled(err);
  if (err instanceof SafeFetchError) return err;
  if (signal.aborted) {
    return new SafeFetchError('timeout', `no complete response within ${totalTimeout} ms`, { cause: err });
  }
  const detail = err instanceof Error ? err.message : String(err);
  const timedOut =
    typeof err === 'object' && err !== null && 'code' in err && /TIMEOUT/.test(String(err.code));
  if (timedOut) return new SafeFetchError('timeout', `the request timed out: ${detail}`, { cause: err });
  return new SafeFetchError('network_error', `the request failed: ${detail}`, { cause: err });
}

/**
 * createSafeFetcher returns the guarded fetch. Non-2xx responses are returned (the caller keeps
 * the status as evidence); refusals and failures throw SafeFetchError.
 */
export function createSafeFetcher(options: SafeFetchOptions = {}): SafeFetch {
  const allowHosts = new Set((options.allowHosts ?? []).map((h) => h.toLowerCase()));
  const settings: FetcherSettings = {
    policy: {
      resolve: options.resolve ?? systemResolve,
      allowAddress: options.allowAddress ?? (() => false),
      allowedHost: (url) => allowHosts.has(url.host.toLowerCase()),
    },
    connectTimeout: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    totalTimeout: options.totalTimeoutMs ?? DEFAULT_TOTAL_TIMEOUT_MS,
    options,
  };
  return async (url, opts = {}) => {
    const caller = opts.signal;
    if (caller?.aborted) throw cancelled();
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), settings.totalTimeout);
    const stop = () => controller.abort();
    caller?.addEventListener('abort', stop, { once: true });
    try {
      return await follow(settings, url, opts, controller.signal);
    } catch (err) {
      throw fetchFailure(err, caller, controller.signal, settings.totalTimeout);
    } finally {
      clearTimeout(timer);
      caller?.removeEventListener('abort', stop);
    }
  };
}
