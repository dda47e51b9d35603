/**
 * Domain errors. Domain code throws these; the service interceptor is the one place they become
 * Connect codes, and anything else becomes `Internal` with its detail kept in the log.
 */
import { Code, ConnectError } from '@connectrpc/connect';

export class DomainError extends Error {
  constructor(
    message: string,
    readonly code: Code,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** An argument breaks a domain rule. */
export class InvalidArgumentError extends DomainError {
  constructor(message: string) {
    super(message, Code.InvalidArgument);
  }
}

export class NotFoundError extends DomainError {
  constructor(message: string) {
    super(message, Code.NotFound);
  }
}

/** The record is not in a state that allows the operation. */
export class FailedPreconditionError extends DomainError {
  constructor(message: string) {
    super(message, Code.FailedPrecondition);
  }
}

/** A save or archive named a revision that is no longer current. */
export class StaleRevisionError extends DomainError {
  constructor(
    readonly currentRevision: number,
    what = 'record',
  ) {
    super(
      `expected_revision is stale: the ${what} is at revision ${currentRevision}; read it again and retry with expected_revision ${currentRevision}`,
      Code.Aborted,
    );
  }
}

export class PermissionDeniedError extends DomainError {
  constructor(message: string) {
    super(message, Code.PermissionDenied);
  }
}

export class ResourceExhaustedError extends DomainError {
  constructor(
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message, Code.ResourceExhausted);
  }
}

export class UnavailableError extends DomainError {
  constructor(message: string) {
    super(message, Code.Unavailable);
  }
}

/**
 * PostgreSQL's data exceptions (SQLSTATE class 22: a value out of range, an invalid byte
 * sequence, an untranslatable character) mean the caller's value cannot be stored, not that the
 * service failed.
 */
function dataException(err: unknown): string | undefined {
  const e = err as { code?: unknown; message?: unknown; severity?: unknown };
  if (typeof e?.code === 'string' && /^22[0-9A-Z]{3}$/.test(e.code) && typeof e.severity === 'string') {
    return `a value could not be stored: ${String(e.message)}`;
  }
  return undefined;
}

/** The error metadata key that carries a stale record's current revision, for callers to show. */
export const CURRENT_REVISION_METADATA = 'current-revision';

/** toConnectError maps a thrown value to what the caller may see; `undefined` means internal. */
export function toConnectError(err: unknown): ConnectError | undefined {
  if (err instanceof StaleRevisionError) {
    return new ConnectError(err.message, err.code, {
      [CURRENT_REVISION_METADATA]: String(err.currentRevision),
    });
  }
  if (err instanceof DomainError) return new ConnectError(err.message, err.code);
  if (err instanceof ConnectError) return err;
  const data = dataException(err);
  if (data !== undefined) return new ConnectError(data, Code.InvalidArgument);
  return undefined;
}
