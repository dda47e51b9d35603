/**
 * The one mapping from domain errors to what a service's caller sees as Connect errors; the
 * service interceptor (connect-server.ts) runs it for every handler.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { isDatabaseUnavailable } from './db.ts';
import { DomainError, type ErrorKind, ResourceExhaustedError, StaleRevisionError } from './errors.ts';
import { refusalDetailsMetadata, refusalIssuesDetails } from './platform-read/refusal.ts';

const CODES: Record<ErrorKind, Code> = {
  invalid_argument: Code.InvalidArgument,
  not_found: Code.NotFound,
  already_exists: Code.AlreadyExists,
  failed_precondition: Code.FailedPrecondition,
  stale_revision: Code.Aborted,
  permission_denied: Code.PermissionDenied,
  resource_exhausted: Code.ResourceExhausted,
  unavailable: Code.Unavailable,
  cancelled: Code.Canceled,
};

/** The error metadata key that carries a stale record's current revision, for callers to show. */
export const CURRENT_REVISION_METADATA = 'current-revision';

/** The error metadata key (a header or trailer) that tells a refused caller how many seconds to wait. */
export const RETRY_AFTER_METADATA = 'retry-after';

/**
 * PostgreSQL's data exceptions (SQLSTATE class 22: a value out of range, an invalid byte
 * sequence, an untranslatable character) and check violations (23514: a value outside a table's
 * CHECK, which backs the bounds the gateway enforces) mean the caller's value cannot be stored,
 * not that the service failed.
 */
function dataException(err: unknown): string | undefined {
  const e = err as { code?: unknown; message?: unknown; severity?: unknown };
  const refused = typeof e?.code === 'string' && (/^22[0-9A-Z]{3}$/.test(e.code) || e.code === '23514');
  if (refused && typeof e.severity === 'string') {
    return `a value could not be stored: ${String(e.message)}`;
  }
  return undefined;
}

/**
 * toConnectError maps a thrown value to what the caller may see; `undefined` means internal.
 * `service` names the service in what it says of its own database.
 */
export function toConnectError(err: unknown, service = 'the service'): ConnectError | undefined {
  if (err instanceof StaleRevisionError) {
    return new ConnectError(err.message, CODES[err.kind], {
      [CURRENT_REVISION_METADATA]: String(err.currentRevision),
    });
  }
  if (err instanceof ResourceExhaustedError && err.retryAfterSeconds !== undefined) {
    return new ConnectError(err.message, CODES[err.kind], {
      [RETRY_AFTER_METADATA]: String(err.retryAfterSeconds),
    });
  }
  if (err instanceof DomainError)
    return new ConnectError(
      err.message,
      CODES[err.kind],
      refusalDetailsMetadata(err.details),
      refusalIssuesDetails(err.issues),
    );
  if (err instanceof ConnectError) return err;
  const data = dataException(err);
  if (data !== undefined) return new ConnectError(data, Code.InvalidArgument);
  if (isDatabaseUnavailable(err)) {
    // Not a fault of the call: the caller may try again once the database is back.
    return new ConnectError(
      `the database of ${service} is not answering (it may be restarting); retry shortly`,
      Code.Unavailable,
    );
  }
  return undefined;
}
