/**
 * A refused platform read that keeps its own error code across a service call. A service that
 * reads the platform for a tool answers with a Connect code (the kind of failure) and carries the
 * code the tool reports (`report_too_large`, the platform's own `rate_limit_exceeded`, ...) in
 * this metadata, since the Connect codes alone would fold those into a few generic ones.
 */
import { type Code, ConnectError } from '@connectrpc/connect';

/** The error metadata key (a response header) that holds the refusal's own code. */
export const REFUSAL_CODE_METADATA = 'adsmcp-refusal-code';

/** A refusal of kind `kind` whose caller should report `code` with `message`. */
export function codedRefusal(code: string, kind: Code, message: string): ConnectError {
  return new ConnectError(message, kind, { [REFUSAL_CODE_METADATA]: code });
}

/** The refusal's own code and message when `err` carries one, else undefined. */
export function refusalOf(err: unknown): { code: string; message: string } | undefined {
  if (!(err instanceof ConnectError)) return undefined;
  const code = err.metadata.get(REFUSAL_CODE_METADATA);
  return code === null || code === '' ? undefined : { code, message: err.rawMessage };
}
