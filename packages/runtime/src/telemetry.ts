/**
 * Traces (OpenTelemetry): one trace follows an MCP request from the gateway through its gRPC calls,
 * the bus messages they enqueue and the call to the ad platform, carried between processes as a
 * W3C `traceparent`. Spans are exported over OTLP/HTTP (JSON) when `OTEL_EXPORTER_OTLP_ENDPOINT`
 * is set; otherwise nothing is registered, every span is the API's no-op and the hooks below cost
 * a function call each. The SDK, the exporter and the Fastify instrumentation are loaded only
 * then: a process that exports nothing does not pay for loading them (a few tenths of a second
 * of CPU at start-up and about 10 MB of memory).
 */
import type { Interceptor } from '@connectrpc/connect';
import {
  type Attributes,
  type Context,
  context,
  INVALID_SPAN_CONTEXT,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';

const TRACER_NAME = '@adsmcp/runtime';
const tracer = () => trace.getTracer(TRACER_NAME);

const NOOP_SPAN = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

let enabled = false;

/** Whether spans are recorded and exported in this process. */
export function tracingEnabled(): boolean {
  return enabled;
}

export interface Tracing {
  /** Exports the spans still buffered and stops; call it on shutdown. */
  shutdown(): Promise<void>;
}

/**
 * startTracing registers the tracer provider for `service` when `OTEL_EXPORTER_OTLP_ENDPOINT` is
 * set, and the Fastify instrumentation, which attaches itself to every Fastify instance created
 * afterwards: call it first in `main`, before any server is built.
 */
export async function startTracing(service: string, env: NodeJS.ProcessEnv = process.env): Promise<Tracing> {
  const endpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (endpoint === undefined || endpoint === '') return { shutdown: async () => {} };
  const [
    { FastifyOtelInstrumentation },
    { W3CTraceContextPropagator },
    { OTLPTraceExporter },
    { resourceFromAttributes },
    { BatchSpanProcessor, NodeTracerProvider },
  ] = await Promise.all([
    import('@fastify/otel'),
    import('@opentelemetry/core'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace-node'),
  ]);
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME ?? service }),
    // The exporter reads OTEL_EXPORTER_OTLP_ENDPOINT (adding /v1/traces) and its headers and timeout itself.
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  provider.register({ propagator: new W3CTraceContextPropagator() });
  const fastify = new FastifyOtelInstrumentation({ registerOnInitialization: true });
  fastify.setTracerProvider(provider);
  fastify.enable();
  enabled = true;
  return {
    async shutdown() {
      enabled = false;
      fastify.disable();
      await provider.shutdown();
    },
  };
}

/** A carrier of string headers: a plain record or a Fetch/Connect `Headers`. */
type Carrier = Record<string, string> | Headers;

const headersSetter = { set: (h: Headers, k: string, v: string) => h.set(k, v) };
const headersGetter = {
  get: (h: Headers, k: string) => h.get(k) ?? undefined,
  keys: (h: Headers) => [...h.keys()],
};

/** injectTraceContext writes the current trace's `traceparent` (and `tracestate`) into `carrier`. */
export function injectTraceContext(carrier: Carrier): void {
  if (!enabled) return;
  if (carrier instanceof Headers) propagation.inject(context.active(), carrier, headersSetter);
  else propagation.inject(context.active(), carrier);
}

/** extractTraceContext is the context `carrier`'s `traceparent` continues, else the current one. */
export function extractTraceContext(carrier: Carrier, base: Context = context.active()): Context {
  if (carrier instanceof Headers) return propagation.extract(base, carrier, headersGetter);
  return propagation.extract(base, carrier);
}

/**
 * inSpan runs `fn` in a new span named `name` under `parent` (default: the current context),
 * ending it when `fn` settles and marking it failed when `fn` throws. With tracing off it just
 * runs `fn`.
 */
export function inSpan<T>(
  name: string,
  opts: { kind?: SpanKind; attributes?: Attributes; parent?: Context },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  if (!enabled) return fn(NOOP_SPAN);
  const parent = opts.parent ?? context.active();
  return tracer().startActiveSpan(
    name,
    { kind: opts.kind ?? SpanKind.INTERNAL, ...(opts.attributes ? { attributes: opts.attributes } : {}) },
    parent,
    async (span) => {
      try {
        return await fn(span);
      } catch (err) {
        span.recordException(err instanceof Error ? err : String(err));
        span.setStatus({
          code: SpanStatusCode.ERROR,
          message: err instanceof Error ? err.message : String(err),
        });
        throw err;
      } finally {
        span.end();
      }
    },
  );
}

/** markFailed marks `span` failed without an exception (a tool error, an HTTP 5xx). */
export function markFailed(span: Span, message: string): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}

/**
 * consumeInSpan runs a bus handler in a consumer span continuing the producer's trace (the
 * `traceparent` the outbox stored in the message's headers).
 */
export function consumeInSpan<T>(
  consumer: string,
  message: { id: string; topic: string; headers: Record<string, string>; attempt: number },
  fn: () => Promise<T>,
): Promise<T> {
  if (!enabled) return fn();
  return inSpan(
    `bus consume ${message.topic}`,
    {
      kind: SpanKind.CONSUMER,
      parent: extractTraceContext(message.headers, ROOT_CONTEXT),
      attributes: {
        'messaging.system': 'adsmcp-bus',
        'messaging.destination.name': message.topic,
        'messaging.consumer.group.name': consumer,
        'messaging.message.id': message.id,
        'adsmcp.bus.attempt': message.attempt,
      },
    },
    fn,
  );
}

/** traceClientInterceptor carries the current trace to the called service in the call's headers. */
export function traceClientInterceptor(): Interceptor {
  return (next) => (req) => {
    injectTraceContext(req.header);
    return next(req);
  };
}

/**
 * serveInSpan runs a call a server serves, `typeName/method`, in a server span continuing the
 * caller's trace (the `traceparent` in `carrier`); without tracing it just runs it.
 */
export function serveInSpan<T>(
  typeName: string,
  method: string,
  carrier: Carrier,
  fn: () => Promise<T>,
): Promise<T> {
  if (!enabled) return fn();
  return inSpan(
    `${typeName}/${method}`,
    {
      kind: SpanKind.SERVER,
      parent: extractTraceContext(carrier, ROOT_CONTEXT),
      attributes: { 'rpc.system': 'connect_rpc', 'rpc.service': typeName, 'rpc.method': method },
    },
    fn,
  );
}

export { SpanKind };
