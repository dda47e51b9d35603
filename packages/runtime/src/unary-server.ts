/**
 * The server side of internal unary calls in the Connect protocol with binary messages, the form
 * our own clients send (unary-transport.ts): the request is read, decoded and answered directly
 * on node:http2's compatibility API. Everything else a service serves (gRPC and gRPC-Web, JSON,
 * streaming methods, health) still goes through connect-node's adapter.
 *
 * Why by hand: measured in one process pair (a trivial method, 20 concurrent calls), connect-node's
 * adapter spent about 530 µs of CPU per call where a bare HTTP/2 handler answering the same bytes
 * spent about 75 µs: web `Request`/`Headers` objects, a handler context with linked abort signals
 * per call, and the universal-handler layers. What a call sees is unchanged: the same checks run
 * around the handler (`guard`: request id, principal token, logs, error mapping, metrics, trace),
 * the handler gets the context fields it uses (`values`, `signal`, the headers), the deadline of
 * `connect-timeout-ms` aborts its signal, and errors are written as the Connect protocol writes
 * them (status from the code, JSON body with the error details, such as a refusal's issues, and
 * metadata as headers; `errorToJsonBytes`, `codeToHttpStatus` from `@connectrpc/connect`).
 */
import type http2 from 'node:http2';
import {
  create,
  type DescMessage,
  type DescMethod,
  type DescService,
  fromBinary,
  type Message,
  toBinary,
} from '@bufbuild/protobuf';
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type ContextValues,
  createContextValues,
  type HandlerContext,
} from '@connectrpc/connect';
import { codeToHttpStatus, errorToJsonBytes, parseTimeout } from '@connectrpc/connect/protocol-connect';
import { validateRequest } from './field-rules.ts';

type UnaryImpl = (input: unknown, ctx: HandlerContext) => unknown;

interface UnaryRoute {
  service: DescService;
  method: DescMethod & { methodKind: 'unary' };
  impl: UnaryImpl;
}

/** What runs around every handler (connect-server.ts's guardCall, bound to its verifier and logger). */
export type CallGuard = <T>(
  typeName: string,
  methodName: string,
  header: { get(name: string): string | null | undefined },
  carrier: Record<string, string>,
  values: ContextValues,
  next: () => Promise<T>,
) => Promise<T>;

/**
 * recordUnaryRoutes wraps `router` so that every service registered through it is also recorded
 * for the unary path: its unary methods, by their Connect path (`/pkg.Service/Method`).
 */
export function recordUnaryRoutes(router: ConnectRouter, routes: Map<string, UnaryRoute>): ConnectRouter {
  const recording = Object.create(router) as ConnectRouter;
  recording.service = ((service: DescService, impl: Record<string, unknown>, options?: unknown) => {
    for (const method of service.methods) {
      const fn = impl[method.localName];
      if (method.methodKind !== 'unary' || typeof fn !== 'function') continue;
      routes.set(`/${service.typeName}/${method.name}`, {
        service,
        method: method as UnaryRoute['method'],
        impl: (fn as UnaryImpl).bind(impl),
      });
    }
    return router.service(service, impl as never, options as never);
  }) as ConnectRouter['service'];
  return recording;
}

/** Whether a request is a unary Connect call in binary form, the only kind this path serves. */
export function isBinaryConnectUnary(req: http2.Http2ServerRequest): boolean {
  const h = req.headers;
  return (
    req.method === 'POST' &&
    h['content-type'] === 'application/proto' &&
    h['connect-protocol-version'] === '1' &&
    h['content-encoding'] === undefined
  );
}

/** The request headers as the guard and the handler read them (first value of a repeated one). */
function headerReader(headers: http2.IncomingHttpHeaders): { get(name: string): string | undefined } {
  return {
    get(name) {
      const v = headers[name.toLowerCase()];
      return Array.isArray(v) ? v[0] : v;
    },
  };
}

function writeError(res: http2.Http2ServerResponse, err: ConnectError): void {
  if (res.headersSent || res.stream.destroyed) return;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  err.metadata.forEach((value, name) => {
    headers[name] = value;
  });
  res.writeHead(codeToHttpStatus(err.code), headers);
  res.end(errorToJsonBytes(err, {}));
}

/**
 * The largest request message a service reads: 32 MiB. Internal messages are far smaller (the
 * gateway reads at most 16 MiB of JSON from a client, a file upload is at most 5 MiB), and a caller
 * cannot make a service hold more, even before its principal token is checked. connect-node's
 * adapter, which serves the other protocols, has the same limit (connect-server.ts).
 */
export const MAX_REQUEST_BYTES = 32 * 1024 * 1024;

/**
 * What one call keeps while it runs. The handler's signal is made only if the handler asks for it
 * (most reads never do); an abort before then is kept and given to the signal when it is made. The
 * response headers and trailers are made only if the handler touches them.
 */
class CallState {
  abortedWith: ConnectError | undefined;
  responseHeader: Headers | undefined;
  responseTrailer: Headers | undefined;
  private controller: AbortController | undefined;

  constructor(readonly timeoutMs: number | undefined) {}

  abort(reason: ConnectError): void {
    if (this.abortedWith !== undefined) return;
    this.abortedWith = reason;
    this.controller?.abort(reason);
  }

  signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.abortedWith !== undefined) this.controller.abort(this.abortedWith);
    }
    return this.controller.signal;
  }
}

/** A timer callback taking its call as an argument, so a deadline costs no closure. */
function abortOnDeadline(state: CallState): void {
  state.abort(new ConnectError('the operation timed out', Code.DeadlineExceeded));
}

/** An error of the request stream: the close handler of serveUnary aborts the call. */
function ignoreRequestError(): void {}

/** serveUnary answers one unary call of `route`; it never throws (every failure is written as an error). */
export function serveUnary(
  route: UnaryRoute,
  guard: CallGuard,
  req: http2.Http2ServerRequest,
  res: http2.Http2ServerResponse,
): void {
  const timeout = parseTimeout((req.headers['connect-timeout-ms'] as string | undefined) ?? null, 0xffffffff);
  if (timeout.error !== undefined) {
    writeError(res, timeout.error);
    return;
  }
  const state = new CallState(timeout.timeoutMs);
  const deadline =
    timeout.timeoutMs === undefined ? undefined : setTimeout(abortOnDeadline, timeout.timeoutMs, state);
  // The caller went away (cancel, deadline, lost connection) before the answer was written.
  const onClose = () => {
    if (!res.writableEnded) state.abort(new ConnectError('the caller canceled the call', Code.Canceled));
  };
  res.once('close', onClose);
  const finish = () => {
    clearTimeout(deadline);
    res.off('close', onClose);
  };
  readRequest(req, res, finish, (chunks) => {
    answer(route, guard, req, state, chunks).then(
      (bytes) => {
        finish();
        writeAnswer(res, state.responseHeader, bytes);
      },
      (err: unknown) => {
        finish();
        writeError(res, ConnectError.from(err));
      },
    );
  });
}

/**
 * Reads the request message into `chunks` for `onEnd`. One larger than MAX_REQUEST_BYTES is refused
 * as it arrives, before any token is checked or the rest is held in memory, and `onEnd` is not called.
 */
function readRequest(
  req: http2.Http2ServerRequest,
  res: http2.Http2ServerResponse,
  finish: () => void,
  onEnd: (chunks: Buffer[]) => void,
): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let tooLarge = false;
  req.on('data', (chunk: Buffer) => {
    if (tooLarge) return; // read and dropped: the answer is already written
    size += chunk.length;
    if (size <= MAX_REQUEST_BYTES) {
      chunks.push(chunk);
      return;
    }
    tooLarge = true;
    chunks.length = 0;
    finish();
    writeError(
      res,
      new ConnectError(
        `the request message is larger than ${MAX_REQUEST_BYTES} bytes, the most a service reads`,
        Code.ResourceExhausted,
      ),
    );
  });
  req.on('error', ignoreRequestError);
  req.on('end', () => {
    if (!tooLarge) onEnd(chunks);
  });
}

/** Runs the guard around the handler and resolves with the encoded answer. */
function answer(
  route: UnaryRoute,
  guard: CallGuard,
  req: http2.Http2ServerRequest,
  state: CallState,
  chunks: Buffer[],
): Promise<Uint8Array> {
  const values = createContextValues();
  const ctx = handlerContext(route, req, state, values);
  const carrier = req.headers as Record<string, string>;
  return guard(route.service.typeName, route.method.name, headerReader(req.headers), carrier, values, () =>
    runHandler(route, ctx, state, chunks),
  );
}

/** The context fields a handler reads, each made only when read. */
function handlerContext(
  route: UnaryRoute,
  req: http2.Http2ServerRequest,
  state: CallState,
  values: ContextValues,
): HandlerContext {
  const started = Date.now();
  return {
    service: route.service,
    method: route.method,
    protocolName: 'connect',
    requestMethod: 'POST',
    get url() {
      return `http://${req.headers[':authority'] ?? 'localhost'}${req.url}`;
    },
    peer: { addr: req.socket?.remoteAddress ?? '' },
    get signal() {
      return state.signal();
    },
    timeoutMs: () => (state.timeoutMs === undefined ? undefined : state.timeoutMs - (Date.now() - started)),
    get requestHeader() {
      const out = new Headers();
      for (const [name, v] of Object.entries(req.headers)) {
        if (name.startsWith(':') || v === undefined) continue;
        for (const one of Array.isArray(v) ? v : [v]) out.append(name, one);
      }
      return out;
    },
    get responseHeader() {
      state.responseHeader ??= new Headers();
      return state.responseHeader;
    },
    get responseTrailer() {
      state.responseTrailer ??= new Headers();
      return state.responseTrailer;
    },
    values,
  } as unknown as HandlerContext;
}

/** Decodes and checks the request, calls the handler and encodes its answer. */
async function runHandler(
  route: UnaryRoute,
  ctx: HandlerContext,
  state: CallState,
  chunks: Buffer[],
): Promise<Uint8Array> {
  let input: unknown;
  try {
    input = fromBinary(route.method.input, Buffer.concat(chunks));
  } catch (err) {
    throw new ConnectError(
      `parse binary: ${err instanceof Error ? err.message : String(err)}`,
      Code.InvalidArgument,
    );
  }
  if (state.abortedWith !== undefined) throw state.abortedWith;
  validateRequest(route.method.input, input as Message);
  const output = await route.impl(input, ctx);
  return toBinary(
    route.method.output as DescMessage,
    create(route.method.output as DescMessage, output as never),
  );
}

function writeAnswer(
  res: http2.Http2ServerResponse,
  responseHeader: Headers | undefined,
  bytes: Uint8Array,
): void {
  if (res.stream.destroyed) return;
  const headers: Record<string, string> = { 'content-type': 'application/proto' };
  responseHeader?.forEach((value, name) => {
    headers[name] = value;
  });
  res.writeHead(200, headers);
  res.end(bytes);
}
