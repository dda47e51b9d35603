/**
 * Domain errors: plain kinds, with no transport in them. Domain code throws these; toConnectError
 * (connect-errors.ts), run by every service's interceptor, is the one place a kind becomes a
 * Connect code, and anything else becomes `Internal` with its detail kept in the log.
 */

export type ErrorKind =
  | 'invalid_argument'
  | 'not_found'
  | 'already_exists'
  | 'failed_precondition'
  | 'stale_revision'
  | 'permission_denied'
  | 'resource_exhausted'
  | 'unavailable'
  | 'cancelled';

/**
 * Fields a refusal names for its caller to show beside its message (the change's status, the
 * claim_token to retry with); the service's answer carries them in its error metadata.
 */
export type RefusalDetails = Readonly<Record<string, string | number | boolean | null>>;

/**
 * One thing a refusal asks its caller to fix: the argument as the tool names it
 * (`variants[1].source_image_url`) and what is wrong with it. A refusal's issues travel whole as
 * its Connect error details (`adsmcp.v1.RefusalIssues`), however many there are.
 */
export interface RefusalIssue {
  readonly path: string;
  readonly message: string;
}

export class DomainError extends Error {
  constructor(
    message: string,
    readonly kind: ErrorKind,
    readonly details?: RefusalDetails,
    readonly issues: readonly RefusalIssue[] = [],
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** An argument breaks a domain rule. */
export class InvalidArgumentError extends DomainError {
  constructor(message: string) {
    super(message, 'invalid_argument');
  }
}

/**
 * Arguments break domain rules, each of `issues` naming one, which the caller shows beside the
 * message that sums them up (every variant whose image could not be saved, every refused row).
 * A subclass rather than a second parameter of InvalidArgumentError, whose constructor keeps the
 * shape the other refusals have.
 */
export class InvalidArgumentIssuesError extends InvalidArgumentError {
  constructor(
    message: string,
    override readonly issues: readonly RefusalIssue[],
  ) {
    super(message);
  }
}

export class NotFoundError extends DomainError {
  constructor(message: string) {
    super(message, 'not_found');
  }
}

/** The record is not in a state that allows the operation. */
export class FailedPreconditionError extends DomainError {
  constructor(message: string, details?: RefusalDetails) {
    super(message, 'failed_precondition', details);
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
      'stale_revision',
    );
  }
}

export class PermissionDeniedError extends DomainError {
  constructor(message: string) {
    super(message, 'permission_denied');
  }
}

export class ResourceExhaustedError extends DomainError {
  constructor(
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message, 'resource_exhausted');
  }
}

export class UnavailableError extends DomainError {
  constructor(message: string) {
    super(message, 'unavailable');
  }
}
