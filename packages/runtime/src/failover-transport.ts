/**
 * Calls to a service that runs as more than one process. A service address may be a
 * comma-separated list (`CHANGES_URL=http://10.0.0.5:7001,http://10.0.0.6:7001`); calls are
 * spread over the addresses in turn, and a unary call moves to another address only when the
 * address refused it before any handler could run: the connection was refused (nothing listens
 * there: the process is stopped or restarting), or the server was draining and refused the
 * HTTP/2 stream (REFUSED_STREAM, or a GOAWAY that the stream came after). A call that reached a
 * server is never sent again, so nothing runs twice. In Kubernetes the address is the one
 * Service address: a list of one, where a refused call is tried once more after a short pause
 * (the next connection reaches another pod).
 */
import type { DescMessage, DescMethodStreaming, DescMethodUnary, MessageInitShape } from '@bufbuild/protobuf';
import {
  Code,
  ConnectError,
  type ContextValues,
  type StreamResponse,
  type Transport,
  type UnaryResponse,
} from '@connectrpc/connect';

/** parseServiceAddresses splits a service address setting into its addresses (at least one). */
export function parseServiceAddresses(setting: string): string[] {
  const addresses = setting
    .split(',')
    .map((a) => a.trim())
    .filter((a) => a !== '');
  if (addresses.length === 0) throw new Error(`a service address is empty (got "${setting}")`);
  return addresses;
}

/** Node error codes that mean the call never reached a server. */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  // Node refuses to open a stream on a session that has received a GOAWAY.
  'ERR_HTTP2_GOAWAY_SESSION',
]);

/**
 * refusedBeforeHandler says whether a failed call certainly never reached a handler: its
 * connection was refused, or its stream was refused by a draining HTTP/2 server. Anything else
 * (a reset, a timeout, an error answer) may have run and is not retried.
 */
export function refusedBeforeHandler(err: unknown): boolean {
  if (!(err instanceof ConnectError)) return false;
  // REFUSED_STREAM (RFC 9113 §8.7): the server did not process the stream. Node reports it as
  // "Stream closed with error code NGHTTP2_REFUSED_STREAM" (Internal), Connect as Unavailable.
  if (/REFUSED_STREAM\b/.test(err.rawMessage)) return true;
  if (err.code !== Code.Unavailable && err.code !== Code.Internal) return false;
  for (let e: unknown = err.cause, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NOT_SENT_CODES.has(code)) return true;
    if (/REFUSED_STREAM\b/.test(e.message)) return true;
  }
  return false;
}

export interface FailoverOptions {
  /** How long an address that refused a call is passed over (another is tried first). */
  downMs?: number;
  /** The pause before an address is tried again within one call. */
  retryPauseMs?: number;
}

/**
 * failoverTransport spreads calls over one transport per address (round robin, passing over
 * addresses that refused a call in the last `downMs`) and moves a unary call that was refused
 * before any handler ran to the next address. Every address is tried once, and when all refused,
 * once more after `retryPauseMs` (so a list of one gets a second chance). Streaming calls are
 * spread but not moved: their input may already have been consumed.
 */
export function failoverTransport(transports: readonly Transport[], opts: FailoverOptions = {}): Transport {
  if (transports.length === 0) throw new Error('failoverTransport needs at least one transport');
  const downMs = opts.downMs ?? 2_000;
  const retryPauseMs = opts.retryPauseMs ?? 100;
  const downUntil = transports.map(() => 0);
  let next = 0;

  /** The order this call tries the addresses in: from the next in turn, those not down first. */
  const order = (): number[] => {
    const start = next;
    next = (next + 1) % transports.length;
    const all = transports.map((_, i) => (start + i) % transports.length);
    const now = Date.now();
    const up = (i: number) => (downUntil[i] ?? 0) <= now;
    return [...all.filter(up), ...all.filter((i) => !up(i))];
  };

  return {
    async unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethodUnary<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: Parameters<Transport['unary']>[3],
      input: MessageInitShape<I>,
      contextValues?: ContextValues,
    ): Promise<UnaryResponse<I, O>> {
      const tries = order();
      // Every address once; when all refused (a process between stop and start), the first again.
      const attempts = [...tries, tries[0] as number];
      let lastError: unknown;
      for (const [n, i] of attempts.entries()) {
        if (n === tries.length) await pause(retryPauseMs, signal);
        const transport = transports[i] as Transport;
        try {
          return await transport.unary(method, signal, timeoutMs, header, input, contextValues);
        } catch (err) {
          if (!refusedBeforeHandler(err) || signal?.aborted === true) throw err;
          downUntil[i] = Date.now() + downMs;
          lastError = err;
        }
      }
      throw lastError;
    },
    stream<I extends DescMessage, O extends DescMessage>(
      method: DescMethodStreaming<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: Parameters<Transport['unary']>[3],
      input: AsyncIterable<MessageInitShape<I>>,
      contextValues?: ContextValues,
    ): Promise<StreamResponse<I, O>> {
      const transport = transports[order()[0] as number] as Transport;
      return transport.stream(method, signal, timeoutMs, header, input, contextValues);
    },
  };
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
