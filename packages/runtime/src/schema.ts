/**
 * Tool input schemas, written once: each builder yields the JSON Schema published in
 * `tools/list` and the catalogue, and a validator whose messages name the argument and the rule
 * it breaks ("`limit` must be an integer from 1 to 500 (got 501)"). They live in the runtime so
 * that a service holds a request to the very schema a tool publishes (`platform-bodies.ts`).
 */
import { dateTimeProblem, isDateTime, shapedAsDateTime } from './date-time.ts';
import { isUuid } from './ids.ts';
import { blankRefusal, hiddenCharacter, showHidden, stackedMarksRefusal } from './text.ts';
import { isWrittenUrl } from './written-url.ts';

export type JsonSchema = { [key: string]: unknown };

/** One broken rule: where (`body.name`, `titles[2]`) and what. */
export interface Issue {
  path: string;
  message: string;
}

export interface Schema<T = unknown> {
  readonly json: JsonSchema;
  /** Appends the issues of `value` at `path` to `out`. */
  check(value: unknown, path: string, out: Issue[]): void;
  /** Phantom: the validated type. */
  readonly _type?: T;
}

export type Infer<S> = S extends Schema<infer T> ? T : never;

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/**
 * A value as a refusal quotes it. A string is cut at 40 characters (code points, so that no
 * surrogate pair is split into two lone halves) and its hidden characters are shown as tokens
 * (`⟨U+202E⟩`): a refusal must not carry the bidi override or zero-width character it refuses.
 */
function show(value: unknown): string {
  if (typeof value === 'string') {
    let end = 0;
    let n = 0;
    for (const ch of value) {
      if (n++ === 40) break;
      end += ch.length;
    }
    return JSON.stringify(showHidden(end < value.length ? `${value.slice(0, end)}…` : value));
  }
  if (Array.isArray(value)) return 'an array';
  if (value === null) return 'null';
  if (typeof value === 'object') return 'an object';
  return String(value);
}

/** A place as a refusal names it; a key the caller made up shows its hidden characters as tokens. */
function name(path: string): string {
  return path === '' ? 'arguments' : `\`${showHidden(path)}\``;
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** Whether `text` is a calendar day written YYYY-MM-DD (2025-02-30 is not: `Date.parse` would roll it over). */
export function validDate(text: string): boolean {
  const m = DATE.exec(text);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const dt = new Date(Date.UTC(y, mo - 1, d));
  return dt.getUTCFullYear() === y && dt.getUTCMonth() === mo - 1 && dt.getUTCDate() === d;
}

/** Whether `text` is an absolute URL of `format` (`^https://`, `^https?://`), written as published. */
function absoluteUrl(text: string, format: 'https-uri' | 'http-uri'): boolean {
  return isWrittenUrl(text, format === 'https-uri' ? 'https' : 'http-or-https');
}

type StringFormat = 'uuid' | 'date' | 'date-time' | 'https-uri' | 'http-uri';

export interface StringRules {
  min?: number;
  max?: number;
  /** At least one character a reader can see (not white space, not a zero-width character). */
  nonBlank?: boolean;
  /**
   * Multi-line text (guidance, notes): line breaks and tabs are allowed. Every other control or
   * format character (U+202E, U+200B, ESC, ...) is refused in every string, since it changes how
   * the text a person reviews is displayed.
   */
  multiline?: boolean;
  pattern?: RegExp;
  /** How to say the pattern to a person ("letters, digits, underscore or hyphen"). */
  patternHint?: string;
  format?: StringFormat;
  description?: string;
}

const FORMAT_WORDS: Record<StringFormat, string> = {
  uuid: 'a UUID',
  date: 'a date (YYYY-MM-DD)',
  'date-time': 'a date-time (RFC 3339, with a time zone)',
  'https-uri': 'an https URL',
  'http-uri': 'an absolute http or https URL',
};

function lengthRule(min: number | undefined, max: number | undefined, unit: string): string {
  if (min !== undefined && max !== undefined)
    return min === max ? `exactly ${min} ${unit}` : `${min} to ${max} ${unit}`;
  if (min !== undefined) return `at least ${min} ${unit}`;
  return `at most ${max} ${unit}`;
}

export function string(rules: StringRules = {}): Schema<string> {
  return {
    json: stringJson(rules),
    check(value, path, out) {
      const message = stringProblem(rules, value, path);
      if (message !== undefined) out.push({ path, message });
    },
  };
}

function stringJson(rules: StringRules): JsonSchema {
  const json: JsonSchema = { type: 'string' };
  if (rules.description) json.description = rules.description;
  if (rules.min !== undefined) json.minLength = rules.min;
  if (rules.max !== undefined) json.maxLength = rules.max;
  if (rules.format === 'uuid') json.format = 'uuid';
  if (rules.format === 'date') json.format = 'date';
  if (rules.format === 'date-time') json.format = 'date-time';
  if (rules.format === 'https-uri') {
    json.format = 'uri';
    json.pattern = '^https://';
  }
  if (rules.format === 'http-uri') {
    json.format = 'uri';
    json.pattern = '^https?://';
  }
  if (rules.pattern) json.pattern = rules.pattern.source;
  else if (rules.nonBlank) json.pattern = '\\S';
  return json;
}

/** The first rule of `rules` that `value` breaks, said to a person; undefined when it keeps them all. */
function stringProblem(rules: StringRules, value: unknown, path: string): string | undefined {
  if (typeof value !== 'string') return `${name(path)} must be a string (got ${typeOf(value)})`;
  // PostgreSQL can store no U+0000 in text or jsonb; refuse it here, by name.
  if (value.includes('\u0000')) return `${name(path)} must not contain the NUL character (U+0000)`;
  const hidden = hiddenCharacter(value, rules.multiline);
  if (hidden !== undefined) {
    return `${name(path)} must not contain the invisible character ${hidden}: control, format and blank characters hide or change what the text shows${rules.multiline ? ' (line breaks and tabs are allowed)' : ''}`;
  }
  const stacked = stackedMarksRefusal(name(path), value);
  if (stacked !== undefined) return stacked;
  // Lengths count Unicode code points, as JSON Schema does.
  const length = [...value].length;
  if ((rules.min !== undefined && length < rules.min) || (rules.max !== undefined && length > rules.max)) {
    return `${name(path)} must be ${lengthRule(rules.min, rules.max, 'characters')} (got ${length})`;
  }
  const blank = rules.nonBlank ? blankRefusal(name(path), value) : undefined;
  if (blank !== undefined) return blank;
  if (rules.pattern && !rules.pattern.test(value)) {
    return `${name(path)} must be ${rules.patternHint ?? `match ${rules.pattern.source}`} (got ${show(value)})`;
  }
  return rules.format === undefined ? undefined : formatProblem(rules.format, value, path);
}

function formatProblem(f: StringFormat, value: string, path: string): string | undefined {
  const ok =
    f === 'uuid'
      ? isUuid(value)
      : f === 'date'
        ? validDate(value)
        : f === 'date-time'
          ? isDateTime(value)
          : absoluteUrl(value, f);
  if (ok) return undefined;
  // A URL with white space or a backslash in it gets told why: it may look right; a
  // date-time, what is wrong with it.
  const hint =
    f.endsWith('-uri') && /[\s\\]/.test(value)
      ? ' with no spaces or backslashes'
      : f === 'date-time' && shapedAsDateTime(value)
        ? `: ${dateTimeProblem(value)}`
        : '';
  return `${name(path)} must be ${FORMAT_WORDS[f]}${hint} (got ${show(value)})`;
}

export interface NumberRules {
  min?: number;
  max?: number;
  /** The value must be greater than this (not equal). */
  greaterThan?: number;
  description?: string;
}

function numeric(kind: 'integer' | 'number', rules: NumberRules): Schema<number> {
  const json: JsonSchema = { type: kind };
  if (rules.description) json.description = rules.description;
  if (rules.min !== undefined) json.minimum = rules.min;
  if (rules.max !== undefined) json.maximum = rules.max;
  if (rules.greaterThan !== undefined) json.exclusiveMinimum = rules.greaterThan;
  const word = kind === 'integer' ? 'an integer' : 'a number';
  const range =
    rules.greaterThan !== undefined
      ? `greater than ${rules.greaterThan}${rules.max !== undefined ? ` and at most ${rules.max}` : ''}`
      : rules.min !== undefined && rules.max !== undefined
        ? `from ${rules.min} to ${rules.max}`
        : rules.min !== undefined
          ? `of at least ${rules.min}`
          : rules.max !== undefined
            ? `of at most ${rules.max}`
            : '';
  return {
    json,
    check(value, path, out) {
      const isNum = typeof value === 'number' && Number.isFinite(value);
      if (!isNum || (kind === 'integer' && !Number.isSafeInteger(value))) {
        out.push({
          path,
          message: `${name(path)} must be ${word}${range ? ` ${range}` : ''} (got ${show(value)})`,
        });
        return;
      }
      const bad =
        (rules.min !== undefined && value < rules.min) ||
        (rules.max !== undefined && value > rules.max) ||
        (rules.greaterThan !== undefined && value <= rules.greaterThan);
      if (bad) out.push({ path, message: `${name(path)} must be ${word} ${range} (got ${value})` });
    },
  };
}

export const integer = (rules: NumberRules = {}) => numeric('integer', rules);
export const number = (rules: NumberRules = {}) => numeric('number', rules);

export function boolean(description?: string): Schema<boolean> {
  return {
    json: description ? { type: 'boolean', description } : { type: 'boolean' },
    check(value, path, out) {
      if (typeof value !== 'boolean')
        out.push({ path, message: `${name(path)} must be true or false (got ${show(value)})` });
    },
  };
}

export function enumOf<const V extends readonly string[]>(
  values: V,
  description?: string,
): Schema<V[number]> {
  const json: JsonSchema = { type: 'string', enum: [...values] };
  if (description) json.description = description;
  return {
    json,
    check(value, path, out) {
      if (typeof value !== 'string' || !values.includes(value)) {
        out.push({ path, message: `${name(path)} must be one of ${values.join(', ')} (got ${show(value)})` });
      }
    },
  };
}

export interface ArrayRules {
  min?: number;
  max?: number;
  unique?: boolean;
  description?: string;
}

export function array<T>(items: Schema<T>, rules: ArrayRules = {}): Schema<T[]> {
  const json: JsonSchema = { type: 'array', items: items.json };
  if (rules.description) json.description = rules.description;
  if (rules.min !== undefined) json.minItems = rules.min;
  if (rules.max !== undefined) json.maxItems = rules.max;
  if (rules.unique) json.uniqueItems = true;
  return {
    json,
    check(value, path, out) {
      if (!Array.isArray(value)) {
        out.push({ path, message: `${name(path)} must be an array (got ${typeOf(value)})` });
        return;
      }
      if (
        (rules.min !== undefined && value.length < rules.min) ||
        (rules.max !== undefined && value.length > rules.max)
      ) {
        out.push({
          path,
          message: `${name(path)} must have ${lengthRule(rules.min, rules.max, 'items')} (got ${value.length})`,
        });
        return;
      }
      if (rules.unique) {
        const seen = new Set<string>();
        for (const [i, item] of value.entries()) {
          const key = JSON.stringify(item);
          if (seen.has(key)) {
            out.push({
              path: `${path}[${i}]`,
              message: `${name(`${path}[${i}]`)} repeats an earlier item; items must be unique`,
            });
            return;
          }
          seen.add(key);
        }
      }
      for (const [i, item] of value.entries()) items.check(item, `${path}[${i}]`, out);
    },
  };
}

type Shape = Record<string, Schema>;
type Optional<S extends Shape, R extends keyof S> = Omit<S, R>;
export type ObjectOf<S extends Shape, R extends keyof S> = { [K in R]: Infer<S[K]> } & {
  [K in keyof Optional<S, R>]?: Infer<S[K]>;
};

/** An object that rejects properties it does not list. */
export function object<S extends Shape, R extends keyof S & string = never>(
  shape: S,
  required: readonly R[] = [],
  description?: string,
): Schema<ObjectOf<S, R>> {
  const properties: Record<string, JsonSchema> = {};
  for (const [k, v] of Object.entries(shape)) properties[k] = v.json;
  const json: JsonSchema = { type: 'object', properties, additionalProperties: false };
  if (required.length > 0) json.required = [...required];
  if (description) json.description = description;
  const allowed = Object.keys(shape);
  return {
    json,
    check(value, path, out) {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        out.push({ path, message: `${name(path)} must be an object (got ${typeOf(value)})` });
        return;
      }
      const rec = value as Record<string, unknown>;
      const at = (k: string) => (path === '' ? k : `${path}.${k}`);
      for (const k of Object.keys(rec)) {
        if (!Object.hasOwn(shape, k)) {
          const where = path === '' ? 'argument' : `property of ${name(path)}`;
          out.push({
            path: at(k),
            message: `unknown ${where} \`${showHidden(k)}\`; allowed: ${allowed.length > 0 ? allowed.join(', ') : 'none'}`,
          });
        }
      }
      for (const k of required) {
        if (rec[k] === undefined) out.push({ path: at(k), message: `${name(at(k))} is required` });
      }
      for (const [k, s] of Object.entries(shape)) {
        if (rec[k] !== undefined) s.check(rec[k], at(k), out);
      }
    },
  };
}

/** `schema` or null. */
export function nullable<T>(schema: Schema<T>): Schema<T | null> {
  return {
    json: { anyOf: [schema.json, { type: 'null' }] },
    check(value, path, out) {
      if (value !== null) schema.check(value, path, out);
    },
  };
}

/**
 * anyOf accepts a value that meets any of the named alternatives; each is published with its
 * name as its `title`. A value that meets none is reported with the issues of the alternative
 * it comes closest to (the one with the fewest issues).
 */
export function anyOf<A extends Record<string, Schema>>(
  alternatives: A,
  description?: string,
): Schema<Infer<A[keyof A]>> {
  const entries = Object.entries(alternatives);
  const json: JsonSchema = { anyOf: entries.map(([title, s]) => ({ title, ...s.json })) };
  if (description) json.description = description;
  return {
    json,
    check(value, path, out) {
      let closest: Issue[] | undefined;
      for (const [, s] of entries) {
        const issues: Issue[] = [];
        s.check(value, path, issues);
        if (issues.length === 0) return;
        if (closest === undefined || issues.length < closest.length) closest = issues;
      }
      out.push(...(closest ?? []));
    },
  };
}

export interface DependentRules {
  /** The property whose schema is chosen. */
  field: string;
  /** The sibling property whose value chooses it. */
  on: string;
  /** The schema of `field` for each value of `on`. */
  cases: Readonly<Record<string, Schema>>;
}

/**
 * dependentField narrows an object schema: when the property `on` holds one of the values in
 * `cases`, property `field` is checked against that case's schema instead of the one `base`
 * gives it (typically an `anyOf` of every case). A value that meets another case's schema is
 * reported as such. The published schema is `base`'s; say in its description which case
 * applies when.
 */
export function dependentField<T>(base: Schema<T>, rules: DependentRules): Schema<T> {
  return {
    json: base.json,
    check(value, path, out) {
      const issues: Issue[] = [];
      base.check(value, path, issues);
      const rec: Record<string, unknown> =
        typeof value === 'object' && value !== null && !Array.isArray(value) ? { ...value } : {};
      const selector = rec[rules.on];
      const fieldValue = rec[rules.field];
      const chosen =
        typeof selector === 'string' && Object.hasOwn(rules.cases, selector)
          ? rules.cases[selector]
          : undefined;
      if (chosen === undefined || fieldValue === undefined) {
        out.push(...issues);
        return;
      }
      const at = path === '' ? rules.field : `${path}.${rules.field}`;
      const within = (p: string) => p === at || p.startsWith(`${at}.`) || p.startsWith(`${at}[`);
      out.push(...issues.filter((i) => !within(i.path)));
      const fieldIssues: Issue[] = [];
      chosen.check(fieldValue, at, fieldIssues);
      if (fieldIssues.length === 0) return;
      const fits = Object.entries(rules.cases).find(
        ([k, s]) => k !== selector && validate(s, fieldValue).length === 0,
      );
      if (fits === undefined) {
        out.push(...fieldIssues);
        return;
      }
      const on = path === '' ? rules.on : `${path}.${rules.on}`;
      out.push({
        path: at,
        message: `${name(at)} has the shape for ${name(on)} ${show(fits[0])}, but ${name(on)} is ${show(selector)}; change ${name(on)} or send ${name(at)} of the shape for ${show(selector)}`,
      });
    },
  };
}

/** validate checks `value` against `schema`; it returns every issue found (empty when valid). */
export function validate(schema: Schema, value: unknown): Issue[] {
  const out: Issue[] = [];
  schema.check(value, '', out);
  return out;
}
