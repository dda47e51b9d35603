/**
 * Runs one `tools/call`: validates the arguments against the catalogue, checks the workspace's
 * features, runs the tool, and shapes every outcome as a tool result. A failure is a result
 * with `isError: true` whose message says what to do; never a transport error.
 */

import { CURRENT_REVISION_METADATA, RETRY_AFTER_METADATA } from '@adsmcp/runtime/connect-errors';
import { isDatabaseUnavailable } from '@adsmcp/runtime/db';
import { type Logger, withRequestId } from '@adsmcp/runtime/log';
import { refusalDetailsOf, refusalIssuesOf, refusalOf } from '@adsmcp/runtime/platform-read/refusal';
import { connectionFailure, unreachableService } from '@adsmcp/runtime/service-client';
import { Code, ConnectError } from '@connectrpc/connect';
import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import type { Behavior, Caller, Catalogue, ToolContext } from '../catalogue/catalogue.ts';
import { type Issue, validate } from '../catalogue/schema.ts';
import { reviewUrl } from '../catalogue/tools/change-tools.ts';
import { ToolFailure } from './tool-failure.ts';

export interface ToolResult {
  [key: string]: unknown;
  content: { type: 'text'; text: string }[];
  structuredContent: Record<string, unknown>;
  isError?: boolean;
}

/** A tool's successful result: its data as structured content and as text. */
export function toolSuccess(data: Record<string, unknown>): ToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: data };
}

/** A tool error: `code` is stable for programs, `message` is for the agent and the person. */
export function toolError(code: string, message: string, extra: Record<string, unknown> = {}): ToolResult {
  const data = { error: { code, message, ...extra } };
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: data };
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

/** Extra fields a service's error carries for programs: seconds to wait, the current revision. */
function errorFields(err: ConnectError): Record<string, unknown> {
  const extra: Record<string, unknown> = {};
  const retry = Number(err.metadata.get(RETRY_AFTER_METADATA));
  if (Number.isFinite(retry) && retry > 0) extra.retry_after_seconds = retry;
  const revision = Number(err.metadata.get(CURRENT_REVISION_METADATA));
  if (err.code === Code.Aborted && Number.isSafeInteger(revision)) extra.current_revision = revision;
  return extra;
}

/**
 * The fields a service's refusal names for the agent (adsmcp-refusal-details) and the issues it
 * lists (its adsmcp.v1.RefusalIssues error details), shown beside the error's code and message,
 * which they never replace. A refusal about a change gets the change's
 * review_url, by the rule changeView uses for every change, since the service does not know the
 * gateway's public address.
 */
function detailsOf(err: ConnectError, publicUrl: string): Record<string, unknown> {
  const details = refusalDetailsOf(err);
  if (typeof details.change_id === 'string') details.review_url = reviewUrl(publicUrl, details.change_id);
  // Each argument at fault, in the shape invalid arguments list theirs: `{path, message}`.
  const issues = refusalIssuesOf(err);
  if (issues.length > 0) details.issues = issues;
  return details;
}

/** The tool error for a service's refusal `err`, with what the service said of it. */
export function fromServiceError(
  err: ConnectError,
  requestId: string,
  behavior: Behavior,
  publicUrl: string,
): ToolResult {
  const failure = connectionFailure(err);
  const named = unreachableService(err);
  const service = named === undefined ? 'a service this tool needs' : `the ${named} service this tool needs`;
  if (failure === 'not-connected' || (failure === 'lost' && behavior === 'read')) {
    return toolError(
      'unavailable',
      `${service} is not answering${behavior === 'read' ? '' : ' and nothing was done'}; retry shortly (request ${requestId})`,
    );
  }
  if (failure === 'lost') {
    return toolError(
      'unavailable',
      `${service} stopped answering during the call, so its outcome is unknown; check with the read tools before retrying (request ${requestId})`,
    );
  }
  // A service that reads the ad platform for a tool names the refusal's own code (report_too_large,
  // the platform's rate_limit_exceeded), which the Connect code alone would fold into a generic one.
  const refusal = refusalOf(err);
  const details = detailsOf(err, publicUrl);
  if (refusal !== undefined) return toolError(refusal.code, refusal.message, details);
  const code = CODE_NAMES[err.code];
  if (code !== undefined) return toolError(code, err.rawMessage, { ...details, ...errorFields(err) });
  if (err.code === Code.Unavailable) {
    // The service's own word that something it needs (the ad platform) is unavailable.
    return toolError('unavailable', `${err.rawMessage} (request ${requestId})`, {
      ...details,
      ...errorFields(err),
    });
  }
  if (err.code === Code.DeadlineExceeded) {
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

/** What a tool call needs of the gateway's dependencies itself: its public address, for review pages. */
export interface CallDeps<D extends { readonly publicUrl: string }> {
  catalogue: Catalogue<D>;
  deps: D;
  logger: Logger;
}

/** callTool runs tool `name` for `caller`. Unknown tools are protocol errors, as MCP says. */
export async function callTool<D extends { readonly publicUrl: string }>(
  d: CallDeps<D>,
  caller: Caller,
  requestId: string,
  name: string,
  args: unknown,
  progress?: ToolContext<D>['progress'],
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
      const ctx: ToolContext<D> = { caller, deps: d.deps, ...(progress === undefined ? {} : { progress }) };
      return toolSuccess(await d.catalogue.run(tool, ctx, args as Record<string, unknown>));
    } catch (err) {
      if (err instanceof ToolFailure) return toolError(err.code, err.message, err.extra);
      if (err instanceof ConnectError) {
        if (err.code === Code.Internal || err.code === Code.Unknown)
          d.logger.error({ err, tool: name }, 'tool failed');
        return fromServiceError(err, requestId, tool.behavior, d.deps.publicUrl);
      }
      if (isDatabaseUnavailable(err)) {
        d.logger.warn({ err, tool: name }, 'tool failed: the gateway database is not answering');
        return toolError(
          'unavailable',
          `the database of the gateway is not answering (it may be restarting); retry shortly (request ${requestId})`,
        );
      }
      d.logger.error({ err, tool: name }, 'tool failed');
      return fromServiceError(
        new ConnectError('internal', Code.Internal),
        requestId,
        tool.behavior,
        d.deps.publicUrl,
      );
    }
  });
}
