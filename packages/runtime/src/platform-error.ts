/**
 * The ad platform's error answers, read as untrusted input. Whatever of them reaches an agent or
 * a person (a tool error, a failed change's reason) goes through here first.
 */

import { isRecord } from './json.ts';

export { isRecord };

const PLATFORM_CODE = /^[a-z][a-z0-9_]{0,63}$/;
const MAX_PLATFORM_MESSAGE = 500;

/**
 * The platform's `{"error": {"code", "message", "field"}}`, read as untrusted text: a code only
 * when it looks like one, a message without control characters and of bounded length.
 */
export function platformError(bodyJson: string): { code?: string; message?: string; field?: string } {
  let body: unknown;
  try {
    body = JSON.parse(bodyJson);
  } catch {
    return {};
  }
  const error = isRecord(body) ? body.error : undefined;
  if (!isRecord(error)) return {};
  const text = (v: unknown) =>
    typeof v === 'string' && v.trim() !== ''
      ? v.replace(/[\p{Cc}\p{Cf}]+/gu, ' ').slice(0, MAX_PLATFORM_MESSAGE)
      : undefined;
  const code = typeof error.code === 'string' && PLATFORM_CODE.test(error.code) ? error.code : undefined;
  const out: { code?: string; message?: string; field?: string } = {};
  if (code !== undefined) out.code = code;
  const message = text(error.message);
  if (message !== undefined) out.message = message;
  const field = text(error.field);
  if (field !== undefined) out.field = field.slice(0, 100);
  return out;
}

/** "the ad platform refused it (HTTP 409 conflict): the ad is archived", from a status and body. */
export function describePlatformRefusal(status: number, bodyJson: string): string {
  const e = platformError(bodyJson);
  return `the ad platform refused it (HTTP ${status}${e.code === undefined ? '' : ` ${e.code}`})${e.message === undefined ? '' : `: ${e.message}`}`;
}
