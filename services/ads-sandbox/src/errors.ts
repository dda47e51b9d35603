/** The platform's error responses: `{ error: { code, message, field? } }` with an HTTP status. */

export interface PlatformErrorOptions {
  /** The dotted path of the request field the error is about (`creative.image_crop.x`, `limit`). */
  field?: string;
  /** Headers to send with the error response (`Retry-After`). */
  headers?: Record<string, string>;
}

/** A request the platform refuses; the server's error handler turns it into its JSON response. */
export class PlatformHttpError extends Error {
  readonly field: string | undefined;
  readonly headers: Record<string, string>;

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    options: PlatformErrorOptions = {},
  ) {
    super(message);
    this.name = 'PlatformHttpError';
    this.field = options.field;
    this.headers = options.headers ?? {};
  }
}

export interface ErrorBody {
  error: { code: string; message: string; field?: string };
}

/** errorBody is the JSON body of every error the platform returns. */
export function errorBody(code: string, message: string, field?: string): ErrorBody {
  return { error: field === undefined ? { code, message } : { code, message, field } };
}

/** invalidRequest is the 400 for a request field that breaks a rule; `message` names both. */
export function invalidRequest(field: string | undefined, message: string): PlatformHttpError {
  return new PlatformHttpError(400, 'invalid_request', message, field === undefined ? {} : { field });
}

/** notFound is the 404 for a resource that does not exist or is not the account's. */
export function notFound(message: string): PlatformHttpError {
  return new PlatformHttpError(404, 'not_found', message);
}
