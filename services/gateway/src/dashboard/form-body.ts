/**
 * How the dashboard's forms arrive, the checks on their fields that the services do not make, and
 * how a decision a service refused is answered.
 */
import { Code, type ConnectError } from '@connectrpc/connect';

/** The one encoding every dashboard form is sent in (an HTML form's default). */
export const FORM_TYPE = 'application/x-www-form-urlencoded';

/**
 * Why a dashboard form post's Content-Type is refused, or undefined when it is the form encoding
 * (or absent: an empty post then fails its CSRF check, which says so).
 */
export function formTypeRefusal(contentType: string | undefined): string | undefined {
  if (contentType === undefined || contentType.trim() === '') return undefined;
  const type = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  if (type === FORM_TYPE) return undefined;
  return `This form must be sent as ${FORM_TYPE} (an HTML form's default encoding), not ${type || 'an empty type'}. Use the form on the dashboard's page.`;
}

/** The largest revision a proposal can have: the RPC field is an int32. */
const MAX_REVISION = 2_147_483_647;

/**
 * A form's whole-number field (the proposal revision the page was showing), or an error that
 * names the field and the rule.
 */
export function wholeNumberField(
  body: Record<string, unknown>,
  field: string,
): { value: number } | { error: string } {
  const raw = body[field];
  const text = typeof raw === 'string' ? raw.trim() : '';
  if (!/^\d{1,10}$/.test(text) || Number(text) > MAX_REVISION) {
    const shown = typeof raw === 'string' ? JSON.stringify(raw.slice(0, 40)) : 'nothing';
    return {
      error: `${field} must be a whole number from 0 to ${MAX_REVISION} (got ${shown}); reload the page and try again.`,
    };
  }
  return { value: Number(text) };
}

/** A form field's text as posted: '' when it is missing or not one value. */
export function formText(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/**
 * The status and message of a decision (approve, reject) a service refused or could not record.
 * From the dashboard a service refuses a decision for the person's role (403), a value of the form
 * (400), or the state of what is decided on (409: a stale object, a decision made meanwhile). A
 * service that failed or could not be reached (503) may or may not have recorded it: the page
 * shown again says where it stands now.
 */
export function decisionRefusal(e: ConnectError, roleMessage: string): { status: number; message: string } {
  switch (e.code) {
    case Code.PermissionDenied:
      return { status: 403, message: roleMessage };
    case Code.InvalidArgument:
      return { status: 400, message: e.rawMessage };
    case Code.FailedPrecondition:
    case Code.Aborted:
    case Code.AlreadyExists:
    case Code.NotFound:
    case Code.OutOfRange:
      return { status: 409, message: e.rawMessage };
    default:
      return {
        status: 503,
        message:
          'The decision could not be confirmed just now; this page shows where things stand. Try again shortly if it is still open.',
      };
  }
}
