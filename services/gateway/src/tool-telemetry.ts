/**
 * What the gateway records about each `tools/call`: a span (continuing the trace of a `traceparent`
 * in the request's `params._meta`, else the HTTP request's) and the per-tool metrics: calls,
 * errors by code, and latency.
 */
import { Counter, Histogram, LATENCY_BUCKETS, registry } from '@adsmcp/runtime/metrics';
import { extractTraceContext, inSpan, markFailed, SpanKind, tracingEnabled } from '@adsmcp/runtime/telemetry';

const calls = new Counter({
  name: 'adsmcp_tool_calls_total',
  help: 'tools/call requests by tool and outcome (ok or error).',
  labelNames: ['tool', 'outcome'] as const,
  registers: [registry],
});
const errors = new Counter({
  name: 'adsmcp_tool_errors_total',
  help: 'tools/call requests that ended in a tool error, by tool and error code.',
  labelNames: ['tool', 'code'] as const,
  registers: [registry],
});
const latency = new Histogram({
  name: 'adsmcp_tool_call_duration_seconds',
  help: 'Time to answer one tools/call, by tool.',
  labelNames: ['tool'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

interface ToolOutcome {
  isError?: boolean;
  structuredContent?: unknown;
}

/** The `error.code` of a tool error's structured content, or `unknown`. */
function errorCode(result: ToolOutcome): string {
  const sc = result.structuredContent as { error?: { code?: unknown } } | undefined;
  const code = sc?.error?.code;
  return typeof code === 'string' && code.length <= 64 ? code : 'unknown';
}

/** The `traceparent`/`tracestate` strings of an MCP request's `_meta`, if any. */
function metaCarrier(meta: unknown): Record<string, string> | undefined {
  if (typeof meta !== 'object' || meta === null) return undefined;
  const m = meta as Record<string, unknown>;
  if (typeof m.traceparent !== 'string') return undefined;
  return {
    traceparent: m.traceparent,
    ...(typeof m.tracestate === 'string' ? { tracestate: m.tracestate } : {}),
  };
}

/**
 * observeToolCall runs one tool call, `run`, for the known tool `name` (unknown names are
 * protocol errors and counted under `unknown`, so a caller cannot grow the label set).
 */
export async function observeToolCall<R extends ToolOutcome>(
  name: string,
  known: boolean,
  meta: unknown,
  run: () => Promise<R>,
): Promise<R> {
  const tool = known ? name : 'unknown';
  const end = latency.startTimer({ tool });
  const traced = async (): Promise<R> => {
    if (!tracingEnabled()) return run();
    const carrier = metaCarrier(meta);
    return inSpan(
      `tools/call ${tool}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': tool },
        ...(carrier === undefined ? {} : { parent: extractTraceContext(carrier) }),
      },
      async (span) => {
        const result = await run();
        if (result.isError === true) markFailed(span, errorCode(result));
        return result;
      },
    );
  };
  try {
    const result = await traced();
    calls.inc({ tool, outcome: result.isError === true ? 'error' : 'ok' });
    if (result.isError === true) errors.inc({ tool, code: errorCode(result) });
    return result;
  } catch (err) {
    calls.inc({ tool, outcome: 'error' });
    errors.inc({ tool, code: 'protocol' });
    throw err;
  } finally {
    end();
  }
}
