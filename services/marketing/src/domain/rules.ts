/**
 * Small value rules that report where a value breaks them and how: each rule appends messages
 * such as `data.variants[3].title must be 3 to 50 characters (got 2)` to a list.
 */
import { isUuid } from '@adsmcp/runtime/ids';

/** A rule checks `value` found at `path` and appends one message per broken rule to `out`. */
export type Rule = (value: unknown, path: string, out: string[]) => void;

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i;

export { isUuid };

function isDateTime(text: string): boolean {
  const m = DATE_TIME.exec(text);
  if (!m) return false;
  const [y, mo, d, h, mi, s] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const day = new Date(Date.UTC(y, mo - 1, d));
  const dateOk = day.getUTCFullYear() === y && day.getUTCMonth() === mo - 1 && day.getUTCDate() === d;
  return dateOk && h <= 23 && mi <= 59 && s <= 60 && !Number.isNaN(Date.parse(text));
}

function isHttpsUrl(text: string): boolean {
  try {
    const u = new URL(text);
    return u.protocol === 'https:' && u.hostname !== '';
  } catch {
    return false;
  }
}

/** How a value reads in a message: strings quoted and shortened, other values by their type. */
export function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return String(value);
}

/** The JSON type of a value, for "must be a string (got number)". */
export function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** Length in Unicode code points, as JSON Schema counts it. */
export function lengthOf(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

function range(min: number, max: number, unit: string): string {
  return min > 0 ? `${min} to ${max} ${unit}` : `at most ${max} ${unit}`;
}

export type TextFormat = 'uuid' | 'https-url' | 'date-time';

const FORMAT_WORDS: Record<TextFormat, string> = {
  uuid: 'a UUID',
  'https-url': 'an https URL',
  'date-time': 'a date-time (RFC 3339, with a time zone)',
};

const FORMAT_CHECKS: Record<TextFormat, (text: string) => boolean> = {
  uuid: isUuid,
  'https-url': isHttpsUrl,
  'date-time': isDateTime,
};

/** A string of `min` to `max` characters (code points), optionally of a format. */
export function text(max: number, o: { min?: number; format?: TextFormat } = {}): Rule {
  const min = o.min ?? 0;
  return (value, path, out) => {
    if (typeof value !== 'string') {
      out.push(`${path} must be a string (got ${typeOf(value)})`);
      return;
    }
    const length = lengthOf(value);
    if (length < min || length > max) {
      out.push(`${path} must be ${range(min, max, 'characters')} (got ${length})`);
      return;
    }
    if (o.format !== undefined && !FORMAT_CHECKS[o.format](value)) {
      out.push(`${path} must be ${FORMAT_WORDS[o.format]} (got ${show(value)})`);
    }
  };
}

/** One of the given strings. */
export function oneOf(values: readonly string[]): Rule {
  return (value, path, out) => {
    if (typeof value !== 'string' || !values.includes(value)) {
      out.push(`${path} must be one of ${values.join(', ')} (got ${show(value)})`);
    }
  };
}

/** An array of `min` to `max` items, each meeting `item`; `unique` refuses repeated items. */
export function list(item: Rule, o: { min?: number; max: number; unique?: boolean }): Rule {
  const min = o.min ?? 0;
  return (value, path, out) => {
    if (!Array.isArray(value)) {
      out.push(`${path} must be an array (got ${typeOf(value)})`);
      return;
    }
    if (value.length < min || value.length > o.max) {
      out.push(`${path} must have ${range(min, o.max, 'items')} (got ${value.length})`);
      return;
    }
    const seen = new Map<string, number>();
    for (const [i, v] of value.entries()) {
      item(v, `${path}[${i}]`, out);
      if (o.unique) {
        const key = JSON.stringify(v);
        const first = seen.get(key);
        if (first !== undefined) out.push(`${path}[${i}] repeats ${path}[${first}]; items must be unique`);
        else seen.set(key, i);
      }
    }
  };
}

/** The fields of an object shape: which are required and the rule of each. */
export interface Shape {
  /** What a person calls the shape ("voice profile"). */
  label: string;
  required: Readonly<Record<string, Rule>>;
  optional: Readonly<Record<string, Rule>>;
}

/** Whether `value` is a plain JSON object. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An object of `shape`: every required field present, none it does not list. */
export function object(shape: Shape): Rule {
  const allowed = [...Object.keys(shape.required), ...Object.keys(shape.optional)];
  return (value, path, out) => {
    if (!isObject(value)) {
      out.push(`${path} must be an object (got ${typeOf(value)})`);
      return;
    }
    for (const key of Object.keys(value)) {
      if (!allowed.includes(key)) {
        out.push(`${path}.${key} is not a property of a ${shape.label}; allowed: ${allowed.join(', ')}`);
      }
    }
    for (const [key, rule] of Object.entries(shape.required)) {
      if (value[key] === undefined) out.push(`${path}.${key} is required`);
      else rule(value[key], `${path}.${key}`, out);
    }
    for (const [key, rule] of Object.entries(shape.optional)) {
      if (value[key] !== undefined) rule(value[key], `${path}.${key}`, out);
    }
  };
}

/** Runs `rule` on `value` at `path` and returns the messages (empty when the value is valid). */
export function check(rule: Rule, value: unknown, path: string): string[] {
  const out: string[] = [];
  rule(value, path, out);
  return out;
}

const MAX_REPORTED = 10;

/** One message from many: the first few, and how many more there were. */
export function summarize(messages: readonly string[]): string {
  const shown = messages.slice(0, MAX_REPORTED).join('; ');
  const more = messages.length - MAX_REPORTED;
  return more > 0 ? `${shown}; and ${more} more` : shown;
}
