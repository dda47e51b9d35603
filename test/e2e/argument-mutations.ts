/**
 * Invalid tool arguments made from a valid example and the tool's published JSON Schema: one
 * mutation at a known place (`body.creative.title`, `variants[2]`), of a known kind, so that a
 * test can require the refusal to name that place and the rule.
 *
 * Hand-written because no library mutates a valid JSON document into an invalid one at a chosen
 * place (JSON Schema data generators, such as json-schema-faker, make valid data only); the random
 * parts are fast-check's arbitraries, and what counts as invalid is decided by a real JSON Schema
 * validator passed in, not here.
 */
import { hiddenCharacter, showHidden } from '@adsmcp/runtime/text';
import fc from 'fast-check';

export type JsonSchema = { readonly [key: string]: unknown };

export type MutationKind =
  | 'wrong-type'
  | 'null'
  | 'numeric-string'
  | 'deep-nesting'
  | 'too-long'
  | 'too-short'
  | 'pattern'
  | 'hidden-character'
  | 'out-of-range'
  | 'huge-number'
  | 'enum'
  | 'unknown-property'
  | 'missing-required'
  | 'too-many-items'
  | 'too-few-items'
  | 'duplicate-item'
  | 'too-many-properties';

export interface Mutation {
  tool: string;
  kind: MutationKind;
  /** Where the broken rule is, written as the gateway writes paths: `body.creative.title`, `ids[2]`. */
  path: string;
  /**
   * What the message must quote in backticks to name the place, when not `path` itself: an unknown
   * property is named by its object and its key, as a person reads it (hidden characters as tokens).
   */
  names?: string[];
  args: Record<string, unknown>;
}

/** What a refusal of each kind must say besides the place: the rule, in the words of the messages. */
export const RULE_WORDS: Readonly<Record<MutationKind, RegExp>> = {
  'wrong-type': /must (be|have|not)\b/,
  null: /must (be|have|not)\b/,
  'numeric-string': /must (be|have|not)\b/,
  'deep-nesting': /must (be|have|not)\b/,
  'too-long': /must be .*\d+ characters|at most \d+ characters/,
  'too-short': /must (be .*\d+ characters|contain a visible character)/,
  pattern: /must (be|not contain|contain a visible character)\b/,
  // An enum's refusal says the values it takes, which leaves out every hidden character.
  'hidden-character':
    /must not contain the (NUL character \(U\+0000\)|invisible character U\+[0-9A-F]{4,6})|must be one of\b/,
  'out-of-range': /must be (an integer|a number)\b/,
  'huge-number': /must be (an integer|a number)\b/,
  enum: /must be one of\b/,
  'unknown-property': /^unknown (argument|property of) .*; allowed: /s,
  'missing-required': /is required/,
  'too-many-items': /must have .*\d+ items/,
  'too-few-items': /must have .*\d+ items/,
  'duplicate-item': /repeats an earlier item; items must be unique/,
  'too-many-properties': /must have at most \d+ (properties|columns)/,
};

/**
 * Kinds whose invalidity the JSON Schema cannot state: the house rule that no string argument
 * holds a control, format or other invisible character. They are sent even where a JSON Schema
 * validator accepts them.
 */
export const HOUSE_RULE_KINDS: ReadonlySet<MutationKind> = new Set(['hidden-character']);

type Segment = string | number;

/** One place in a tool's arguments that a schema describes: present in the example or not. */
interface Site {
  segments: Segment[];
  schema: JsonSchema;
  /** The JSON types any alternative of the place's schema allows (`integer` within `number`). */
  allowed: string[];
  /**
   * The valid arguments the place is in: the example, or the example with an optional object or
   * array it leaves out filled in with a small valid value, so that the places inside it are reached.
   */
  base: Record<string, unknown>;
  /** The example's value there; undefined when the example leaves the property out. */
  value: unknown;
}

/** `body.creative.title`, `variants[2].source_image_url`: the gateway's way of naming a place. */
export function pathOf(segments: readonly Segment[]): string {
  let out = '';
  for (const s of segments) out += typeof s === 'number' ? `[${s}]` : out === '' ? s : `.${s}`;
  return out;
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function types(schema: JsonSchema): string[] {
  const t = schema.type;
  return typeof t === 'string' ? [t] : Array.isArray(t) ? (t as string[]) : [];
}

function hasType(schema: JsonSchema, t: string): boolean {
  return types(schema).includes(t);
}

function num(schema: JsonSchema, key: string): number | undefined {
  const v = schema[key];
  return typeof v === 'number' ? v : undefined;
}

function properties(schema: JsonSchema): Record<string, JsonSchema> {
  return (schema.properties ?? {}) as Record<string, JsonSchema>;
}

function required(schema: JsonSchema): string[] {
  return (schema.required ?? []) as string[];
}

/** The alternatives of an `anyOf` (a nullable schema is one, with `{type: null}`), or the schema. */
function alternatives(schema: JsonSchema): JsonSchema[] {
  return Array.isArray(schema.anyOf) ? (schema.anyOf as JsonSchema[]) : [schema];
}

/**
 * The alternative a value is checked against: the first the validator accepts it by, else the
 * first of its type, else the first that is not `null`.
 */
function alternativeFor(schema: JsonSchema, value: unknown, accepts: Accepts): JsonSchema {
  const alts = alternatives(schema);
  if (alts.length === 1) return alts[0] as JsonSchema;
  const t = typeOf(value);
  return (
    (value !== undefined ? alts.find((a) => accepts(a, value)) : undefined) ??
    alts.find((a) => hasType(a, t) || (t === 'integer' && hasType(a, 'number'))) ??
    alts.find((a) => !hasType(a, 'null')) ??
    (alts[0] as JsonSchema)
  );
}

/** The JSON types a schema allows over all its alternatives; none when it does not say. */
function allowedTypes(schema: JsonSchema): string[] {
  const all = alternatives(schema).flatMap(types);
  return all.includes('number') ? [...all, 'integer'] : all;
}

/** Whether `value` meets `schema`, by a real JSON Schema validator. */
export type Accepts = (schema: JsonSchema, value: unknown) => boolean;

/** Every place of the arguments the schema describes, from the example's values down. */
function sites(
  schema: JsonSchema,
  value: unknown,
  accepts: Accepts,
  base: Record<string, unknown>,
  segments: Segment[] = [],
): Site[] {
  const alt = alternativeFor(schema, value, accepts);
  const out: Site[] =
    segments.length > 0 ? [{ segments, schema: alt, allowed: allowedTypes(schema), base, value }] : [];
  if (hasType(alt, 'object') && alt.properties !== undefined) {
    const rec = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
    for (const [k, s] of Object.entries(properties(alt))) {
      const at = [...segments, k];
      if (rec[k] !== undefined) {
        out.push(...sites(s, rec[k], accepts, base, at));
        continue;
      }
      const absent = alternativeFor(s, undefined, accepts);
      out.push({ segments: at, schema: absent, allowed: allowedTypes(s), base, value: undefined });
      const filled =
        hasType(absent, 'object') || hasType(absent, 'array') ? smallValid(absent, accepts) : undefined;
      if (filled !== undefined) out.push(...sites(s, filled, accepts, withValue(base, at, filled), at));
    }
  }
  if (hasType(alt, 'array') && Array.isArray(value) && typeof alt.items === 'object') {
    for (const [i, item] of value.entries())
      out.push(...sites(alt.items as JsonSchema, item, accepts, base, [...segments, i]));
  }
  return out;
}

/** Texts tried, in order, for a string a schema describes only by its pattern and lengths. */
const PLAIN_TEXTS = [
  'a',
  'example',
  'Example text',
  'AAA',
  'EUR',
  'US',
  '1',
  '1.5',
  'a_1',
  'example.com',
  'name:asc',
];

/**
 * A small value `schema` accepts, with only its required properties and one item in a list, or
 * undefined when none is found simply. Strings are plain ASCII (a pattern's own examples from
 * fast-check only when no plain text fits), so that the value breaks no rule the schema cannot state.
 */
function smallValid(schema: JsonSchema, accepts: Accepts, depth = 0): unknown {
  if (depth > 8) return undefined;
  const alt = alternatives(schema).find((a) => !hasType(a, 'null')) ?? schema;
  const fits = (v: unknown) => (v !== undefined && accepts(alt, v) ? v : undefined);
  if (Array.isArray(alt.enum)) return fits(alt.enum[0]);
  if (hasType(alt, 'boolean')) return true;
  if (hasType(alt, 'integer') || hasType(alt, 'number')) {
    const min = num(alt, 'minimum');
    const gt = num(alt, 'exclusiveMinimum');
    return [min, gt === undefined ? undefined : gt + 1, 1, 0, num(alt, 'maximum')]
      .map(fits)
      .find((v) => v !== undefined);
  }
  if (hasType(alt, 'string')) {
    const format = alt.format;
    const formatted =
      format === 'uuid'
        ? ['3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90']
        : format === 'date'
          ? ['2026-10-01']
          : format === 'date-time'
            ? ['2026-10-01T09:00:00Z']
            : format === 'uri'
              ? ['https://example.com/']
              : [];
    const min = num(alt, 'minLength') ?? 0;
    const plain = [...formatted, ...PLAIN_TEXTS, 'a'.repeat(Math.max(min, 1))]
      .map(fits)
      .find((v) => v !== undefined);
    if (plain !== undefined || typeof alt.pattern !== 'string') return plain;
    return fc
      .sample(fc.stringMatching(new RegExp(alt.pattern)), { seed: 1, numRuns: 50 })
      .find((v) => hiddenCharacter(v) === undefined && accepts(alt, v));
  }
  if (hasType(alt, 'array')) {
    const item = smallValid((alt.items ?? {}) as JsonSchema, accepts, depth + 1);
    if (item === undefined) return undefined;
    return fits(Array.from({ length: Math.max(num(alt, 'minItems') ?? 1, 1) }, () => item));
  }
  if (hasType(alt, 'object')) {
    const props = properties(alt);
    const out: Record<string, unknown> = {};
    for (const k of required(alt)) {
      const v = smallValid(props[k] ?? {}, accepts, depth + 1);
      if (v === undefined) return undefined;
      out[k] = v;
    }
    return fits(out);
  }
  return undefined;
}

const REMOVE = Symbol('remove');

/**
 * The example with `value` at `segments`, or the property removed when `value` is REMOVE; at no
 * segments, `value` is the arguments themselves.
 */
function withValue(
  example: Record<string, unknown>,
  segments: readonly Segment[],
  value: unknown,
): Record<string, unknown> {
  if (segments.length === 0) return structuredClone(value) as Record<string, unknown>;
  const root = structuredClone(example);
  let at = root as Record<Segment, unknown>;
  for (const s of segments.slice(0, -1)) {
    const next = at[s];
    if (typeof next === 'object' && next !== null) at = next as Record<Segment, unknown>;
    else {
      const made: Record<Segment, unknown> = {};
      at[s] = made;
      at = made;
    }
  }
  const last = segments[segments.length - 1] as Segment;
  if (value === REMOVE) delete at[last];
  else at[last] = value;
  return root;
}

/**
 * Characters no string argument may hold (NUL, C0 and C1 controls, bidi overrides and isolates,
 * zero-width and other format characters, line and paragraph separators, lone surrogates, tag
 * characters, the blank Braille pattern); none of them is a line break or a tab, which multi-line
 * text allows.
 */
const HIDDEN = [
  '\u0000',
  '\u0007',
  '\u001b',
  '\u007f',
  '\u0085',
  '\u00ad',
  '\u061c',
  '\u180e',
  '\u200b',
  '\u200e',
  '\u2028',
  '\u2029',
  '\u202e',
  '\u2066',
  '\u2800',
  '\u3164',
  '\ufeff',
  '\ud800',
  '\udfff',
  '\u{e0041}',
];

/** Keys that a JSON parser's callers might treat as special: the edge refuses them before any tool. */
const RESERVED_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

const anyJson: fc.Arbitrary<unknown> = fc
  .jsonValue({ maxDepth: 2 })
  .filter((v) => !JSON.stringify(v).match(/"(__proto__|constructor|prototype)":/));

const wrongTypeValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(null, true, false, 0, -1, 1.5, 1e308, '', 'text', [], ['a'], {}, { a: 1 }),
  anyJson,
);

const NUMERIC_STRINGS = ['NaN', 'Infinity', '-Infinity', '1e309', '-0', '5', '0x10', ' 1', '1,5', '١٢'];

function nested(depth: number, asArray: boolean): unknown {
  let v: unknown = 'bottom';
  for (let i = 0; i < depth; i++) v = asArray ? [v] : { a: v };
  return v;
}

/** A string of exactly `length` code points, of one repeated character. */
function stringOf(length: number, ch: string): string {
  return ch.repeat(length);
}

/** The arbitrary mutations at one site. */
function siteMutations(tool: string, example: Record<string, unknown>, site: Site): fc.Arbitrary<Mutation>[] {
  const { schema, value, segments } = site;
  const path = pathOf(segments);
  const at = (kind: MutationKind, v: fc.Arbitrary<unknown>, where = path): fc.Arbitrary<Mutation> =>
    v.map((x) => ({ tool, kind, path: where, args: withValue(example, segments, x) }));
  const { allowed } = site;
  // A value of a type the place does not take, so that the refusal is about the place itself
  // rather than about something inside a value of the right type.
  const foreign = wrongTypeValue.filter((v) => !allowed.includes(typeOf(v)));
  const out: fc.Arbitrary<Mutation>[] = [at('wrong-type', foreign), at('null', fc.constant(null))];
  const nestings = [
    ...(allowed.includes('object') ? [] : [false]),
    ...(allowed.includes('array') ? [] : [true]),
  ];
  if (nestings.length > 0) {
    out.push(
      at(
        'deep-nesting',
        fc
          .tuple(fc.integer({ min: 2, max: 40 }), fc.constantFrom(...nestings))
          .map(([d, asArray]) => nested(d, asArray)),
      ),
    );
  }
  if (hasType(schema, 'string')) {
    const base = typeof value === 'string' && value.length > 0 ? value : 'a';
    const max = num(schema, 'maxLength');
    const min = num(schema, 'minLength');
    const ch = [...base][0] as string;
    if (max !== undefined) {
      out.push(
        at(
          'too-long',
          fc
            .tuple(fc.integer({ min: 1, max: 50 }), fc.constantFrom(ch, 'a', '7', 'é', '😀'))
            .map(([extra, c]) => stringOf(max + extra, c)),
        ),
      );
    }
    if (min !== undefined && min > 0) {
      out.push(
        at(
          'too-short',
          fc.integer({ min: 0, max: min - 1 }).map((n) => stringOf(n, ch)),
        ),
      );
    }
    if (schema.pattern !== undefined || schema.format !== undefined) {
      out.push(
        at(
          'pattern',
          fc.oneof(
            fc.constantFrom(
              'not valid',
              `${base} `,
              ` ${base}`,
              `${base}/..`,
              'https://',
              'ftp://example.com/',
              'http://exa mple.com/',
              '2026-02-30',
              '2026-13-01',
              '2026-10-01T25:00:00Z',
              '2026-10-01T10:00:00',
              '00000000-0000-0000-0000-00000000000g',
              '{3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90}',
              'EUR1',
              'eu',
            ),
            fc.string({ maxLength: 30 }),
            fc.string({ unit: 'binary', maxLength: 12 }),
          ),
        ),
      );
    }
    out.push(
      at(
        'hidden-character',
        fc.tuple(fc.constantFrom(...HIDDEN), fc.nat()).map(([h, n]) => {
          const chars = typeof value === 'string' && value.length > 0 ? [...value] : ['a', 'b'];
          // After the first character: a byte-order mark that opens CSV text is no character of it.
          const i = 1 + (n % chars.length);
          return [...chars.slice(0, i), h, ...chars.slice(i)].join('');
        }),
      ),
    );
    if (Array.isArray(schema.enum)) {
      const values = schema.enum as string[];
      out.push(
        at(
          'enum',
          fc.oneof(
            fc
              .constantFrom(...values)
              .chain((v) =>
                fc.constantFrom(v.toUpperCase(), `${v} `, ` ${v}`, `${v}_x`, v.slice(0, -1), `${v}\u00a0`),
              ),
            fc.string({ maxLength: 20 }),
          ),
        ),
      );
    }
  }
  if (hasType(schema, 'integer') || hasType(schema, 'number')) {
    const isInt = hasType(schema, 'integer');
    const min = num(schema, 'minimum');
    const max = num(schema, 'maximum');
    const gt = num(schema, 'exclusiveMinimum');
    const below: number[] = [];
    if (min !== undefined) below.push(min - 1, min - 1000, -1e15);
    if (gt !== undefined) below.push(gt, gt - 1);
    if (!isInt && min !== undefined) below.push(min - 0.001);
    const above: number[] = [];
    if (max !== undefined) above.push(max + 1, max * 2 + 1, 1e15);
    if (!isInt && max !== undefined) above.push(max + 0.001);
    const range = [...below, ...above];
    if (range.length > 0) out.push(at('out-of-range', fc.constantFrom(...range)));
    if (isInt) out.push(at('out-of-range', fc.constantFrom(1.5, -0.5, 0.1, (max ?? min ?? 1) + 0.5)));
    out.push(
      at('huge-number', fc.constantFrom(1e308, -1e308, 2 ** 53 + 2, -(2 ** 63), 1e21, Number.MAX_VALUE)),
    );
    out.push(at('numeric-string', fc.constantFrom(...NUMERIC_STRINGS)));
  }
  if (hasType(schema, 'array')) {
    const items = Array.isArray(value) ? value : [];
    const max = num(schema, 'maxItems');
    const min = num(schema, 'minItems');
    const item = typeof schema.items === 'object' ? (schema.items as JsonSchema) : {};
    if (max !== undefined && items.length > 0) {
      out.push(
        at(
          'too-many-items',
          fc
            .integer({ min: 1, max: 5 })
            .map((extra) => Array.from({ length: max + extra }, (_, i) => items[i % items.length])),
        ),
      );
    }
    if (min !== undefined && min > 0) {
      out.push(
        at(
          'too-few-items',
          fc.integer({ min: 0, max: min - 1 }).map((n) => items.slice(0, n)),
        ),
      );
    }
    if (schema.uniqueItems === true && items.length > 0 && (max === undefined || items.length < max)) {
      out.push(
        fc.nat().map((n) => ({
          tool,
          kind: 'duplicate-item' as const,
          path: pathOf([...segments, items.length]),
          args: withValue(example, segments, [...items, items[n % items.length]]),
        })),
      );
    }
    if (max === undefined || items.length < max) {
      // An item of the wrong type after the valid ones, named by its index.
      const bad = hasType(item, 'object') ? fc.constantFrom<unknown>('text', 1, null, []) : wrongTypeValue;
      out.push(
        bad.map((b) => ({
          tool,
          kind: 'wrong-type' as const,
          path: pathOf([...segments, items.length]),
          args: withValue(example, segments, [...items, b]),
        })),
      );
    }
  }
  if (hasType(schema, 'object')) out.push(...objectMutations(tool, example, site));
  return out;
}

/** The mutations of an object's properties: an unknown one, a required one left out, too many. */
function objectMutations(
  tool: string,
  example: Record<string, unknown>,
  site: Site,
): fc.Arbitrary<Mutation>[] {
  const { schema, value, segments } = site;
  const out: fc.Arbitrary<Mutation>[] = [];
  const rec = (typeof value === 'object' && value !== null && !Array.isArray(value) ? value : {}) as Record<
    string,
    unknown
  >;
  const props = properties(schema);
  if (schema.additionalProperties === false) {
    const unknownKey = fc
      .oneof(
        fc.constantFrom(
          'unexpected',
          'id',
          'revision',
          'extra_field',
          'Account_ID',
          'name ',
          'type',
          'x-debug',
          '',
          'a.b',
          'items[0]',
          '`',
          'ünïcode',
          '\u202egnirts',
          'zero\u200bwidth',
          'nul\u0000',
          'k'.repeat(300),
        ),
        fc.stringMatching(/^[a-z][a-z0-9_]{0,24}$/),
        fc.string({ unit: 'binary', maxLength: 20 }),
      )
      .filter((k) => !Object.hasOwn(props, k) && !RESERVED_KEYS.has(k));
    out.push(
      fc.tuple(unknownKey, wrongTypeValue).map(([k, v]) => ({
        tool,
        kind: 'unknown-property' as const,
        path: pathOf([...segments, k]),
        names: segments.length === 0 ? [showHidden(k)] : [pathOf(segments), showHidden(k)],
        args: withValue(example, segments, { ...rec, [k]: v }),
      })),
    );
  }
  const present = required(schema).filter((k) => rec[k] !== undefined);
  if (present.length > 0) {
    out.push(
      fc.constantFrom(...present).map((k) => ({
        tool,
        kind: 'missing-required' as const,
        path: pathOf([...segments, k]),
        args: withValue(example, [...segments, k], REMOVE),
      })),
    );
  }
  const maxProps = num(schema, 'maxProperties');
  if (maxProps !== undefined) {
    out.push(
      fc.integer({ min: 1, max: 3 }).map((extra) => {
        const more: Record<string, unknown> = { ...rec };
        for (let i = 0; Object.keys(more).length < maxProps + extra; i++) more[`column_${i}`] = 'x';
        return {
          tool,
          kind: 'too-many-properties' as const,
          path: pathOf(segments),
          args: withValue(example, segments, more),
        };
      }),
    );
  }
  return out;
}

/**
 * mutationsOf is every kind of single mutation of `example` that `schema` describes, as one
 * arbitrary: a place, then a kind that applies there, then the value. Whether a mutation is in
 * fact invalid is for the caller to check (an enum value changed to another allowed one is not).
 */
export function mutationsOf(
  tool: string,
  schema: JsonSchema,
  example: Record<string, unknown>,
  accepts: Accepts,
): fc.Arbitrary<Mutation> {
  const places = sites(schema, example, accepts, example);
  const perSite = places.map((s) => fc.oneof(...siteMutations(tool, s.base, s)));
  const root = objectMutations(tool, example, {
    segments: [],
    schema: alternativeFor(schema, example, accepts),
    allowed: ['object'],
    base: example,
    value: example,
  });
  const all = [...perSite, ...root];
  if (all.length === 0) throw new Error(`${tool}: its schema describes no place to mutate`);
  return fc.oneof(...all);
}

/** A tool error as the gateway shapes it: a stable code, a message, and each issue's place. */
export interface ToolErrorBody {
  code?: unknown;
  message?: unknown;
  issues?: unknown;
}

/**
 * What is wrong with a refusal of `m`, or undefined when it is right: an `invalid_argument` error
 * whose message names the place in backticks (an unknown property by its object and its key, as
 * the message says it) and the rule, and whose `issues` carry that place for a program.
 */
export function refusalProblem(m: Mutation, error: ToolErrorBody | undefined): string | undefined {
  if (error === undefined) return 'no error in the result';
  if (error.code !== 'invalid_argument') return `error code ${String(error.code)}, not invalid_argument`;
  if (typeof error.message !== 'string') return 'the error has no message';
  const issues = Array.isArray(error.issues) ? (error.issues as { path?: unknown; message?: unknown }[]) : [];
  const mine = issues.filter((i) => i.path === m.path);
  if (mine.length === 0) {
    return `no issue at ${m.path} (issues at: ${issues.map((i) => String(i.path)).join(', ') || 'none'})`;
  }
  const named = (text: string) => (m.names ?? [m.path]).every((n) => text.includes(`\`${n}\``));
  const rule = RULE_WORDS[m.kind];
  const fits = mine.find((i) => typeof i.message === 'string' && named(i.message) && rule.test(i.message));
  if (fits === undefined) {
    return `the issue at ${m.path} does not name it in backticks with the rule ${rule}: ${mine.map((i) => String(i.message)).join(' | ')}`;
  }
  if (!error.message.includes(fits.message as string)) return 'the message leaves out the issue';
  // What was sent is quoted as a person can read it: a hidden character as a token, never itself.
  const hidden = hiddenCharacter(error.message);
  if (hidden !== undefined) return `the message carries the hidden character ${hidden}: ${error.message}`;
  return undefined;
}
