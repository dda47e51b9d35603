/** The platform's error responses: `{ error: { code, message } }` with an HTTP status. */

/** A request the platform refuses; the server's error handler turns it into its JSON response. */
export class PlatformHttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'PlatformHttpError';
  }
}

export interface ErrorBody {
  error: { code: string; message: string };
}

/** errorBody is the JSON body of every error the platform returns. */
export function errorBody(code: string, message: string): ErrorBody {
  return { error: { code, message } };
}
