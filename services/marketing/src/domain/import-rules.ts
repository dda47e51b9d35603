/** The rules import requests share: lengths, currency, dates and time zones (personal data: personal-data.ts). */
import { InvalidArgumentError } from '@adsmcp/runtime/errors';

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const CURRENCY = /^[A-Z]{3}$/;
/** IANA zone names: Area/Location, Etc/GMT+5, UTC; never an offset such as +05:00. */
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+\-/]*$/;

export function checkLength(field: string, value: string, min: number, max: number): void {
  // Characters are code points: at most the UTF-16 length, so a short enough text needs no count.
  const length = value.length <= max && min <= 1 ? value.length : [...value].length;
  if (length < min || length > max)
    throw new InvalidArgumentError(`${field} must be ${min} to ${max} characters (got ${length})`);
}

export function checkNoNul(field: string, value: string): void {
  if (value.includes('\u0000'))
    throw new InvalidArgumentError(`${field} must not contain the NUL character (U+0000)`);
}

export function checkCurrency(field: string, value: string): void {
  if (!CURRENCY.test(value))
    throw new InvalidArgumentError(
      `${field} must be three uppercase letters (ISO 4217, such as EUR; got ${JSON.stringify(value)})`,
    );
}

export function isDate(value: string): boolean {
  const m = DATE.exec(value);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const dt = new Date(Date.UTC(y, mo - 1, d));
  return dt.getUTCFullYear() === y && dt.getUTCMonth() === mo - 1 && dt.getUTCDate() === d;
}

export function checkDate(field: string, value: string): void {
  if (!isDate(value))
    throw new InvalidArgumentError(`${field} must be a date (YYYY-MM-DD; got ${JSON.stringify(value)})`);
}

/** Whether `name` is an IANA time zone this runtime knows (Intl refuses any other). */
export function isTimeZone(name: string): boolean {
  if (name.length > 100 || !ZONE_NAME.test(name)) return false;
  try {
    new Intl.DateTimeFormat('en', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

export function checkTimezone(field: string, value: string): void {
  if (!isTimeZone(value))
    throw new InvalidArgumentError(
      `${field} must be an IANA time zone such as Europe/Berlin (got ${JSON.stringify(value.slice(0, 100))})`,
    );
}
