/**
 * Runs one `tools/call`: validates the arguments against the catalogue, checks the workspace's
 * features, runs the tool, and shapes every outcome as a tool result. A failure is a result
 * with `isError: true` whose message says what to do; never a transport error.
 */
import { type Logger, withRequestId } from '@adsmcp/runtime/log';
import { Code, ConnectError } from '@connectrpc/connect';
import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import type { Caller, Catalogue } from '../catalogue/catalogue.ts';
import { type Issue, validate } from '../catalogue/schema.ts';

export interface ToolResult {
  [key: string]: unknown;
  content: { type: 'text'; text: string }[];
  structuredContent: Record<string, unknown>;
  isError?: boolean;
}

function success(data: Record<string, unknown>): ToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: data };
}

/** A tool error: `code` is stable for programs, `message` is for the agent and the person. */
export function toolError(code: string, message: string, extra: Record<string, unknown> = {}): ToolResult {
  const data = { error: { code, message, ...extra } };
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: data };
}

/**
 * ToolFailure is a tool's own failure, thrown from its `run`: callTool returns it as
 * `toolError(code, message)`, for outcomes no service error code states (such as an ad-platform
 * answer the tool maps itself).
 */
export class ToolFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ToolFailure';
  }
}

function invalidArguments(tool: string, issues: Issue[]): ToolResult {
  const message = `invalid arguments for ${tool}: ${issues.map((i) => i.message).join('; ')}`;
  return toolError('invalid_argument', message, { issues });
}

const CODE_NAMES: Partial<Record<Code, string>> = {
  [Code.InvalidArgument]: 'invalid_argument',
  [Code.NotFound]: 'not_found',
  [Code.AlreadyExists]: 'already_exists',
  [Code.FailedPrecondition]: 'failed_precondition',
  [Code.Aborted]: 'stale_revision',
  [Code.PermissionDenied]: 'permission_denied',
  [Code.ResourceExhausted]: 'rate_limited',
  [Code.OutOfRange]: 'invalid_argument',
};

/**
 * Whether the call failed because the connection to the service was lost, not because the
 * service answered with an error. Our client raises such errors itself: a refused or reset
 * connection carries the Node error as its cause (a reset arrives as Aborted, which a service
 * uses for a stale revision), and a service process that dies mid-call closes the HTTP/2 stream
 * (Canceled; the gateway never cancels its own calls).
 */
function lostConnection(err: ConnectError): boolean {
  return err.cause !== undefined || err.code === Code.Canceled;
}

function fromServiceError(err: ConnectError, requestId: string): ToolResult {
  if (lostConnection(err)) {
    return toolError(
      'unavailable',
      `a service this tool needs stopped answering during the call, so its outcome is unknown; check with the read tools before retrying (request ${requestId})`,
    );
  }
  const code = CODE_NAMES[err.code];
  if (code !== undefined) {
    const retry = Number(err.metadata.get('retry-after'));
    return toolError(
      code,
      err.rawMessage,
      Number.isFinite(retry) && retry > 0 ? { retry_after_seconds: retry } : {},
    );
  }
  if (err.code === Code.Unavailable || err.code === Code.DeadlineExceeded) {
    return toolError(
      'unavailable',
      `a service this tool needs did not answer in time; retry shortly (request ${requestId})`,
    );
  }
  return toolError(
    'internal',
    `the tool failed unexpectedly; nothing more is known to the caller (request ${requestId})`,
  );
}

export interface CallDeps<D> {
  catalogue: Catalogue<D>;
  deps: D;
  logger: Logger;
}

/** callTool runs tool `name` for `caller`. Unknown tools are protocol errors, as MCP says. */
export async function callTool<D>(
  d: CallDeps<D>,
  caller: Caller,
  requestId: string,
  name: string,
  args: unknown,
): Promise<ToolResult> {
  const tool = d.catalogue.byName.get(name);
  if (tool === undefined) {
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `unknown tool: ${name}; tools/list names the tools`,
    );
  }
  const issues = validate(tool.input, args ?? {});
  if (issues.length > 0) return invalidArguments(name, issues);
  const missing = tool.features.filter((f) => !caller.features.includes(f));
  if (missing.length > 0) {
    return toolError(
      'feature_disabled',
      `${name} needs the ${missing.join(', ')} feature, which is not enabled for this workspace; an administrator can enable it`,
      { features: missing },
    );
  }
  return withRequestId(requestId, async () => {
    try {
      return success(await tool.run({ caller, deps: d.deps }, args as never));
    } catch (err) {
      if (err instanceof ToolFailure) return toolError(err.code, err.message);
      if (err instanceof ConnectError) {
        if (err.code === Code.Internal || err.code === Code.Unknown)
          d.logger.error({ err, tool: name }, 'tool failed');
        return fromServiceError(err, requestId);
      }
      d.logger.error({ err, tool: name }, 'tool failed');
      return fromServiceError(new ConnectError('internal', Code.Internal), requestId);
    }
  });
}
