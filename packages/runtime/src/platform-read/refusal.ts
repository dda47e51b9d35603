/**
 * A refused platform read that keeps its own error code across a service call. A service that
 * reads the platform for a tool answers with a Connect code (the kind of failure) and carries the
 * code the tool reports (`report_too_large`, the platform's own `rate_limit_exceeded`, ...) in
 * this metadata, since the Connect codes alone would fold those into a few generic ones.
 */
import { RefusalIssuesSchema } from '@adsmcp/proto/adsmcp/v1/refusal_pb';
import { type Code, ConnectError } from '@connectrpc/connect';
import type { RefusalDetails, RefusalIssue } from '../errors.ts';

export type { RefusalDetails, RefusalIssue } from '../errors.ts';

/** The error metadata key (a response header) that holds the refusal's own code. */
export const REFUSAL_CODE_METADATA = 'adsmcp-refusal-code';

/**
 * The error metadata key that holds the fields a caller shows beside the refusal's code and
 * message (the change's status, the claim_token to retry with), as a JSON object.
 */
export const REFUSAL_DETAILS_METADATA = 'adsmcp-refusal-details';

/** A header is no place for a document: the few fields a refusal names fit well within this. */
export const MAX_REFUSAL_DETAILS_BYTES = 4096;

// `issues` is the refusal's list (its Connect error details), which a scalar may not stand for.
const RESERVED = new Set(['code', 'message', 'issues']);

/**
 * The metadata carrying `details`. Non-ASCII characters are escaped (a header value is ASCII), so
 * the value is still JSON. Details that name `code` or `message`, or that outgrow the bound, are
 * the service's own fault and throw, rather than reach the caller cut or overriding the refusal.
 */
export function refusalDetailsMetadata(details: RefusalDetails | undefined): Record<string, string> {
  if (details === undefined || Object.keys(details).length === 0) return {};
  const reserved = Object.keys(details).filter((k) => RESERVED.has(k));
  if (reserved.length > 0)
    throw new Error(`refusal details may not name ${reserved.join(', ')}: they are the refusal's own`);
  const json = JSON.stringify(details).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  if (json.length > MAX_REFUSAL_DETAILS_BYTES)
    throw new Error(
      `refusal details take ${json.length} bytes; at most ${MAX_REFUSAL_DETAILS_BYTES} fit in the error metadata`,
    );
  return { [REFUSAL_DETAILS_METADATA]: json };
}

/**
 * The Connect error details carrying `issues`: an `adsmcp.v1.RefusalIssues` message, which the
 * Connect protocol writes in the error's body and gRPC in its status details, so a list of any
 * length arrives whole (a header would bound it); none when there are no issues.
 */
export function refusalIssuesDetails(
  issues: readonly RefusalIssue[] = [],
): { desc: typeof RefusalIssuesSchema; value: { issues: RefusalIssue[] } }[] {
  if (issues.length === 0) return [];
  return [
    {
      desc: RefusalIssuesSchema,
      value: { issues: issues.map((i) => ({ path: i.path, message: i.message })) },
    },
  ];
}

/**
 * A refusal of kind `kind` whose caller should report `code` with `message`, and `details` and
 * `issues` beside them.
 */
export function codedRefusal(
  code: string,
  kind: Code,
  message: string,
  details?: RefusalDetails,
  issues?: readonly RefusalIssue[],
): ConnectError {
  return new ConnectError(
    message,
    kind,
    { [REFUSAL_CODE_METADATA]: code, ...refusalDetailsMetadata(details) },
    refusalIssuesDetails(issues),
  );
}

/**
 * The fields `err` names for its caller to show, without `code` and `message` (which stay the
 * refusal's own); empty when it names none or its metadata is not a JSON object within the bound.
 */
export function refusalDetailsOf(err: ConnectError): Record<string, unknown> {
  const raw = err.metadata.get(REFUSAL_DETAILS_METADATA);
  if (raw === null || raw.length > MAX_REFUSAL_DETAILS_BYTES) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return {};
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return {};
  return Object.fromEntries(Object.entries(parsed).filter(([k]) => !RESERVED.has(k)));
}

/**
 * The issues `err` lists for its caller to fix, in the order the service found them; empty when
 * it lists none. Details of other types, and any that do not decode, are not issues.
 */
export function refusalIssuesOf(err: ConnectError): RefusalIssue[] {
  return err
    .findDetails(RefusalIssuesSchema)
    .flatMap((d) => d.issues.map((i) => ({ path: i.path, message: i.message })));
}

/** The refusal's own code and message when `err` carries one, else undefined. */
export function refusalOf(err: unknown): { code: string; message: string } | undefined {
  if (!(err instanceof ConnectError)) return undefined;
  const code = err.metadata.get(REFUSAL_CODE_METADATA);
  return code === null || code === '' ? undefined : { code, message: err.rawMessage };
}
