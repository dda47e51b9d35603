/**
 * A stand-in for the Kubernetes Service in front of the gateway's replicas, which cannot run on
 * this machine: one loopback HTTP address that hands each request to the next gateway in turn,
 * so MCP clients and browsers keep one URL while replicas stop and start behind it.
 *
 * Like a balancer that retries only what never reached a server (Envoy's `connect-failure` and
 * `refused-stream`), it moves a request to the next gateway only when that gateway refused the
 * connection (it is stopped or restarting) or answered the fixed 503 a closing Fastify server
 * gives before any route or hook runs. Anything else, including a connection that breaks after
 * the request was sent, reaches the client as it happened, so no request runs twice. The request
 * body is forwarded as it arrives (a gateway sees a slow body slowly, and answers a large one from
 * its declared length) and kept in memory so that it can be sent again; responses (event streams
 * too) are passed through as they arrive. Each request opens its own connection to a gateway, so a draining
 * gateway's refusal is a refused connection rather than a kept-alive socket it is closing.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RoundRobinProxy {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /**
   * Takes a gateway out of the rotation or puts it back, as Kubernetes removes a terminating
   * pod's endpoint at the moment it sends SIGTERM and adds a started one once it is ready.
   */
  setServing(target: string, serving: boolean): void;
  /** Stops listening and ends the connections it holds. */
  close(): Promise<void>;
}

export interface RoundRobinProxyOptions {
  /** The port to listen on (0 for an ephemeral one). */
  port: number;
  /** The gateways' base URLs (`http://127.0.0.1:<port>`). */
  targets: readonly string[];
}

/** What Fastify sends, before any route or hook runs, to a request that arrives while it closes. */
export const FASTIFY_CLOSING_BODY =
  '{"error":"Service Unavailable","message":"Service Unavailable","statusCode":503}';

/** Request headers that describe one hop, not the request (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
]);

type Attempt =
  | { kind: 'answered'; res: IncomingMessage & { bufferedBody?: Buffer } }
  | { kind: 'refused'; reason: string }
  | { kind: 'failed'; err: Error };

/**
 * The client's request body as it arrives: forwarded to the current attempt at once (so a
 * gateway sees a slow body slowly, and may refuse a large one from its declared length before it
 * is sent), and kept, so that an attempt a gateway refused can be replayed to the next one.
 */
class RequestBody {
  readonly chunks: Buffer[] = [];
  ended = false;
  #sink: http.ClientRequest | undefined;

  constructor(req: IncomingMessage) {
    req.on('data', (c: Buffer) => {
      this.chunks.push(c);
      this.#sink?.write(c);
    });
    req.on('end', () => {
      this.ended = true;
      this.#sink?.end();
    });
  }

  /** Sends what has arrived to `out`, and the rest as it comes. */
  pipeTo(out: http.ClientRequest): void {
    this.#sink = out;
    for (const c of this.chunks) out.write(c);
    if (this.ended) out.end();
  }
}

/** Sends the request to one gateway; a refusal is reported, not thrown, so the next can be tried. */
function attempt(target: string, req: IncomingMessage, body: RequestBody): Promise<Attempt> {
  return new Promise((resolve) => {
    const url = new URL(req.url ?? '/', target);
    const headers: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (!HOP_BY_HOP.has(name) && value !== undefined) headers[name] = value;
    }
    headers.connection = 'close';
    const out = http.request(url, { method: req.method, headers, agent: false });
    let answered = false;
    out.on('error', (err: NodeJS.ErrnoException) => {
      // After an answer (a gateway that refused a body early and closed), the answer stands.
      if (answered) return;
      resolve(err.code === 'ECONNREFUSED' ? { kind: 'refused', reason: err.code } : { kind: 'failed', err });
    });
    out.on('response', (res) => {
      answered = true;
      if (res.statusCode !== 503) {
        resolve({ kind: 'answered', res });
        return;
      }
      // A 503: either the server was closing (nothing ran) or an answer of the gateway's own.
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', (err) => resolve({ kind: 'failed', err }));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (text === FASTIFY_CLOSING_BODY) resolve({ kind: 'refused', reason: 'closing' });
        else resolve({ kind: 'answered', res: Object.assign(res, { bufferedBody: Buffer.from(text) }) });
      });
    });
    // The headers go at once: the gateway may answer from them (a declared length over its limit).
    out.flushHeaders();
    body.pipeTo(out);
  });
}

function relay(res: IncomingMessage & { bufferedBody?: Buffer }, to: ServerResponse): void {
  const headers = { ...res.headers };
  for (const name of HOP_BY_HOP) delete headers[name];
  to.writeHead(res.statusCode ?? 502, headers);
  if (res.bufferedBody !== undefined) {
    to.end(res.bufferedBody);
    return;
  }
  res.pipe(to);
  // The client went away: stop reading the gateway's answer (an event stream may never end).
  to.on('close', () => res.destroy());
}

/** startRoundRobinProxy listens on loopback and spreads requests over `targets` in turn. */
export async function startRoundRobinProxy(opts: RoundRobinProxyOptions): Promise<RoundRobinProxy> {
  if (opts.targets.length === 0) throw new Error('a round-robin proxy needs at least one target');
  let next = 0;
  const outOfRotation = new Set<string>();
  const server = http.createServer((req, res) => {
    void (async () => {
      const body = new RequestBody(req);
      const start = next;
      next = (next + 1) % opts.targets.length;
      const refusals: string[] = [];
      for (let i = 0; i < opts.targets.length; i++) {
        const target = opts.targets[(start + i) % opts.targets.length] as string;
        if (outOfRotation.has(target)) {
          refusals.push(`${target}: out of rotation`);
          continue;
        }
        const outcome = await attempt(target, req, body);
        if (outcome.kind === 'answered') return relay(outcome.res, res);
        if (outcome.kind === 'failed') {
          res
            .writeHead(502, { 'content-type': 'text/plain' })
            .end(`gateway failed: ${outcome.err.message}\n`);
          return;
        }
        refusals.push(`${target}: ${outcome.reason}`);
      }
      res
        .writeHead(503, { 'content-type': 'text/plain', 'retry-after': '1' })
        .end(`no gateway took the request (${refusals.join('; ')})\n`);
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`proxy failed: ${String(err)}\n`);
    });
  });
  // Longer than clients keep an idle connection (undici: 4 s), so that the client, not this
  // proxy, closes it: a request sent as the proxy closed the connection would fail.
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    setServing(target, serving) {
      if (!opts.targets.includes(target)) throw new Error(`${target} is not one of the proxy's gateways`);
      if (serving) outOfRotation.delete(target);
      else outOfRotation.add(target);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
