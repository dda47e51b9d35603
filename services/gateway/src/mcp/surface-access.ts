/**
 * What the MCP surface beyond tools (resources, prompts, completion) shares: it reads the records
 * the tools read, through the same RPCs with the caller's principal, and only where the caller may
 * use the tool that reads them (its scope, role and workspace features); a service's refusal
 * becomes the protocol error a client expects.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { ProtocolError, ProtocolErrorCode, ResourceNotFoundError } from '@modelcontextprotocol/server';
import { accessDenied, type Caller, type Catalogue } from '../catalogue/catalogue.ts';

/** The JSON-RPC code the edge answers a refused access with (as for tools). */
export const FORBIDDEN = -32003;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Why `caller` may not use `toolName` (scope, role or a feature that is off), or undefined. */
export function refusal<D>(catalogue: Catalogue<D>, caller: Caller, toolName: string): string | undefined {
  const tool = catalogue.byName.get(toolName);
  if (tool === undefined) return `${toolName} is not served`;
  const denied = accessDenied(caller.principal, tool);
  if (denied) return denied;
  const missing = tool.features.filter((f) => !caller.features.includes(f));
  if (missing.length > 0) {
    return `this needs the ${missing.join(', ')} feature, which is not enabled for this workspace`;
  }
  return undefined;
}

export function mayUse<D>(catalogue: Catalogue<D>, caller: Caller, toolName: string): boolean {
  return refusal(catalogue, caller, toolName) === undefined;
}

/** Throws the forbidden error when `caller` may not use `toolName`. */
export function requireTool<D>(
  catalogue: Catalogue<D>,
  caller: Caller,
  toolName: string,
  what: string,
): void {
  const why = refusal(catalogue, caller, toolName);
  if (why !== undefined)
    throw new ProtocolError(FORBIDDEN, `forbidden: ${what} is read as ${toolName} reads it; ${why}`);
}

/** An invalid-params error naming `field` and the rule it breaks. */
export function invalidParam(field: string, rule: string): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid params: \`${field}\` ${rule}`);
}

/** `value` as a UUID, or the invalid-params error naming `field`. */
export function uuidParam(field: string, value: unknown): string {
  if (typeof value !== 'string' || !UUID.test(value)) {
    throw invalidParam(field, `must be a UUID (got ${JSON.stringify(String(value ?? '')).slice(0, 80)})`);
  }
  return value.toLowerCase();
}

/**
 * A service's refusal, for a resource read: not found (another workspace's record, or none) is the
 * resource-not-found error naming the URI; a bad argument is invalid params in the service's words;
 * anything else says the service could not answer, without its internals.
 */
export function resourceError(err: unknown, uri: string): Error {
  if (err instanceof ProtocolError) return err;
  if (err instanceof ConnectError) {
    if (err.code === Code.NotFound || err.code === Code.PermissionDenied) {
      return new ResourceNotFoundError(uri, `Resource not found: ${uri}`);
    }
    if (err.code === Code.InvalidArgument || err.code === Code.OutOfRange) {
      return new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid params: ${err.rawMessage}`);
    }
    if (err.code === Code.FailedPrecondition) {
      return new ProtocolError(ProtocolErrorCode.InvalidParams, err.rawMessage);
    }
  }
  return new ProtocolError(
    ProtocolErrorCode.InternalError,
    `a service this resource needs did not answer; retry shortly (${uri})`,
  );
}

/**
 * What `resources/list`, `prompts/get` and `completion/complete` answer when a service they read
 * fails: what the client got wrong stays its own error, and a service's refusal of the request is
 * invalid params in its words; anything else says which request could not be answered and to
 * retry, never a service's code or internal words (a Connect code passed through would reach the
 * client as a JSON-RPC error code of its own, 14 for unavailable).
 */
export function surfaceError(err: unknown, method: string): Error {
  if (err instanceof ProtocolError) return err;
  if (err instanceof ConnectError && REFUSALS.has(err.code)) {
    return new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid params: ${err.rawMessage}`);
  }
  return new ProtocolError(
    ProtocolErrorCode.InternalError,
    `a service ${method} needs did not answer; retry shortly`,
  );
}

/** A service's refusal of what was asked: asking again the same way gets the same answer. */
const REFUSALS: ReadonlySet<Code> = new Set([
  Code.InvalidArgument,
  Code.OutOfRange,
  Code.FailedPrecondition,
  Code.NotFound,
  Code.PermissionDenied,
]);
