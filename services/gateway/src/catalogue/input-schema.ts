/**
 * Tool arguments derived from an RPC's request message. rpc-mapping.ts turns validated arguments
 * into the request by the proto JSON mapping, so the request's field names are the argument names
 * (but for the few fields output-schema.ts's toolFieldName renames) and an enum field takes its
 * words (enum-words.ts); this file gives each one the schema its type and its `buf.validate` rules
 * say, built with schema.ts's builders so that a refusal names the argument and the rule in this
 * project's words.
 *
 * What the proto cannot say comes from the row, per field: a description, that text must show a
 * visible character (nonBlank) or may span lines (multiline), a format the rules do not know
 * (https-uri, date), how to say a pattern to a person, that null is taken as unset (nullable); or
 * a whole schema of the row's own, which replaces the derived one (an explicit override, named as
 * such in input-schema.test.ts).
 *
 * A field is a required argument when
 *   - its rules say `required`, or
 *   - it has no presence (a proto3 scalar or list without `optional`) and its rules refuse its zero
 *     value (a UUID, a minimum length or item count, a list of allowed words, a range without 0),
 *     unless they are ignored at the zero value: leaving it out would send the zero value, which the
 *     service refuses, or
 *   - the row says so (`required: true`): a field the service needs that the rules cannot name,
 *     such as a boolean whose zero value (false) is a choice the caller must make.
 */
import { type FieldRules, field as fieldRulesOption } from '@adsmcp/proto/buf/validate/validate_pb';
import { enumWords } from '@adsmcp/runtime/enum-words';
import { type DescField, type DescMessage, getOption, hasOption, ScalarType } from '@bufbuild/protobuf';
import { hasPresence, toolFieldName } from './output-schema.ts';
import {
  array,
  boolean,
  enumOf,
  integer,
  type JsonSchema,
  type NumberRules,
  nullable,
  number,
  object,
  type Schema,
  type StringRules,
  string,
} from './schema.ts';

/** What a row adds to a derived field: what its proto cannot say. */
export interface FieldAdditions {
  description?: string;
  /** Text with at least one visible character. */
  nonBlank?: boolean;
  /** Text that may hold line breaks and tabs. */
  multiline?: boolean;
  /** A format the rules cannot state; `uuid` is the rules' own (`string.uuid`). */
  format?: 'https-uri' | 'http-uri' | 'date' | 'date-time';
  /** How to say the proto's pattern to a person. */
  patternHint?: string;
  /** Required although the rules leave it optional (see the file comment). */
  required?: boolean;
  /**
   * Null taken too, as the field left unset (the JSON mapping reads null so): how a caller clears
   * a field it read back as null. Only a field with presence, which null can leave unset.
   */
  nullable?: boolean;
  /** For a list: what to add to each item. */
  items?: FieldOverride;
  /** For a message: what to add to its fields. */
  fields?: InputOverrides;
}

/** Additions to the derived schema, or a schema of the row's own that replaces it. */
export type FieldOverride = FieldAdditions | Schema;

/** Per argument: the field's proto name, or its tool name where output-schema.ts renames it. */
export type InputOverrides = Readonly<Record<string, FieldOverride>>;

export interface InputOptions {
  /** The route's `fixed` request fields: the tool sets them, so they are no arguments. */
  fixed?: Readonly<Record<string, unknown>>;
  /**
   * Request fields (by tool name) the tool does not offer, so never sends: a retired field the
   * service refuses, or a filter that is another caller's (the dashboard's). Each must be one the
   * service takes left unset.
   */
  omit?: readonly string[];
  /** The object's own description. */
  description?: string;
}

function isSchema(o: FieldOverride): o is Schema {
  return 'check' in o && typeof o.check === 'function';
}

function rulesOf(field: DescField): FieldRules | undefined {
  return hasOption(field, fieldRulesOption) ? getOption(field, fieldRulesOption) : undefined;
}

/**
 * A rule the builders cannot publish exactly (a list of allowed numbers, an exclusive maximum of a
 * double) stops the gateway at start-up, naming the field: derived silently, the tool would accept
 * what the service refuses. Such a field takes a schema of the row's own.
 */
function refuseInexpressible(field: DescField, rules: FieldRules | undefined): void {
  const t = rules?.type;
  const which =
    (t?.case === 'int32' || t?.case === 'int64') && t.value.in.length > 0
      ? `${t.case}.in`
      : t?.case === 'double' && t.value.lessThan.case === 'lt'
        ? 'double.lt'
        : undefined;
  if (which !== undefined) {
    throw new Error(
      `${field.parent.typeName}.${field.name}: its rule ${which} has no input schema; give the field a schema of the row's own`,
    );
  }
  if (t?.case === 'repeated') refuseInexpressible(field, t.value.items);
}

type Bounds = {
  lessThan: { case: 'lt' | 'lte' | undefined; value?: number | bigint };
  greaterThan: { case: 'gt' | 'gte' | undefined; value?: number | bigint };
};

/** Integer bounds as NumberRules: `lt n` is `max n-1` and `gt n` is `min n+1` for whole numbers. */
function integerRange(r: Bounds | undefined): NumberRules {
  const out: NumberRules = {};
  if (r === undefined) return out;
  const lo = r.greaterThan;
  const hi = r.lessThan;
  if (lo.case !== undefined) out.min = Number(lo.value) + (lo.case === 'gt' ? 1 : 0);
  if (hi.case !== undefined) out.max = Number(hi.value) - (hi.case === 'lt' ? 1 : 0);
  return out;
}

function doubleRange(r: Bounds | undefined): NumberRules {
  const out: NumberRules = {};
  if (r === undefined) return out;
  const lo = r.greaterThan;
  const hi = r.lessThan;
  if (lo.case === 'gte') out.min = Number(lo.value);
  if (lo.case === 'gt') out.greaterThan = Number(lo.value);
  if (hi.case !== undefined) out.max = Number(hi.value);
  return out;
}

/** Whether the rules refuse the field's zero value ("", 0, an empty list). */
function refusesZero(rules: FieldRules): boolean {
  const t = rules.type;
  switch (t.case) {
    case 'string': {
      const s = t.value;
      return (
        s.wellKnown.case === 'uuid' ||
        s.minLen > 0n ||
        (s.in.length > 0 && !s.in.includes('')) ||
        (s.pattern !== '' && !new RegExp(s.pattern).test(''))
      );
    }
    case 'int32':
    case 'int64':
    case 'double': {
      const { min, max, greaterThan } = t.case === 'double' ? doubleRange(t.value) : integerRange(t.value);
      return (
        (min !== undefined && min > 0) ||
        (max !== undefined && max < 0) ||
        (greaterThan !== undefined && greaterThan >= 0)
      );
    }
    case 'repeated':
      return t.value.minItems > 0n;
    default:
      return false;
  }
}

/** Whether the field is a required argument: the rule written down in the file comment. */
function isRequired(field: DescField, additions: FieldAdditions | undefined): boolean {
  if (additions?.required === true) return true;
  const rules = rulesOf(field);
  if (rules === undefined) return false;
  if (rules.required) return true;
  // IGNORE_IF_ZERO_VALUE (1) or IGNORE_ALWAYS (3): the zero value passes.
  if (rules.ignore !== 0) return false;
  return !hasPresence(field) && refusesZero(rules);
}

/** Any JSON object (google.protobuf.Struct): the mapping takes it as it is. */
function anyObject(description?: string): Schema<Record<string, unknown>> {
  return {
    json: description ? { type: 'object', description } : { type: 'object' },
    check(value, path, out) {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        out.push({ path, message: `\`${path}\` must be an object` });
      }
    },
  };
}

/** A map field: an object whose every value has the map's value schema. */
function mapOf(values: Schema, description?: string): Schema<Record<string, unknown>> {
  const json: JsonSchema = { type: 'object', additionalProperties: values.json };
  if (description) json.description = description;
  return {
    json,
    check(value, path, out) {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        out.push({ path, message: `\`${path}\` must be an object` });
        return;
      }
      for (const [k, v] of Object.entries(value)) values.check(v, `${path}.${k}`, out);
    },
  };
}

function stringRules(rules: FieldRules | undefined, add: FieldAdditions): StringRules {
  const out: StringRules = {};
  if (add.description !== undefined) out.description = add.description;
  const s = rules?.type.case === 'string' ? rules.type.value : undefined;
  if (s !== undefined && s.minLen > 0n) out.min = Number(s.minLen);
  if (s !== undefined && s.maxLen > 0n) out.max = Number(s.maxLen);
  if (add.nonBlank) out.nonBlank = true;
  if (add.multiline) out.multiline = true;
  if (s !== undefined && s.pattern !== '') out.pattern = new RegExp(s.pattern);
  if (add.patternHint !== undefined) out.patternHint = add.patternHint;
  if (s?.wellKnown.case === 'uuid') out.format = 'uuid';
  else if (add.format !== undefined) out.format = add.format;
  return out;
}

const INTEGER_RANGES = {
  int32: { min: -2_147_483_648, max: 2_147_483_647 },
  uint32: { min: 0, max: 4_294_967_295 },
  int64: { min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER },
  uint64: { min: 0, max: Number.MAX_SAFE_INTEGER },
} as const;

function integerKind(type: ScalarType): keyof typeof INTEGER_RANGES {
  switch (type) {
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return 'uint32';
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return 'int64';
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return 'uint64';
    default:
      return 'int32';
  }
}

/** The schema of one value of a scalar field with these rules (an item's, for a list). */
function scalarValue(type: ScalarType, rules: FieldRules | undefined, add: FieldAdditions): Schema {
  const t = rules?.type;
  switch (type) {
    case ScalarType.STRING: {
      const words = t?.case === 'string' ? t.value.in : [];
      return words.length > 0 ? enumOf(words, add.description) : string(stringRules(rules, add));
    }
    case ScalarType.BYTES:
      // The JSON mapping takes bytes as base64 text.
      return string(stringRules(undefined, add));
    case ScalarType.BOOL:
      return boolean(add.description);
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return number({
        ...(t?.case === 'double' ? doubleRange(t.value) : {}),
        ...(add.description === undefined ? {} : { description: add.description }),
      });
    default: {
      // A bound the rules leave open is the type's own, as the JSON mapping refuses a number
      // beyond it: 32 bits, or for 64 bits the safe integers a JSON number holds exactly.
      const range: NumberRules = { ...INTEGER_RANGES[integerKind(type)] };
      const ruled = t?.case === 'int32' || t?.case === 'int64' ? integerRange(t.value) : {};
      if (ruled.min !== undefined) range.min = ruled.min;
      if (ruled.max !== undefined) range.max = ruled.max;
      return integer({
        ...range,
        ...(add.description === undefined ? {} : { description: add.description }),
      });
    }
  }
}

function fieldSchema(field: DescField, override: FieldOverride | undefined): Schema {
  if (override !== undefined && isSchema(override)) return override;
  const add: FieldAdditions = override ?? {};
  if (add.nullable !== true) return derivedField(field, add);
  if (!hasPresence(field)) {
    throw new Error(
      `${field.parent.typeName}.${field.name}: only a field with presence may take null, which leaves it unset`,
    );
  }
  return nullable(derivedField(field, add));
}

function derivedField(field: DescField, add: FieldAdditions): Schema {
  const rules = rulesOf(field);
  refuseInexpressible(field, rules);
  switch (field.fieldKind) {
    case 'scalar':
      return scalarValue(field.scalar, rules, add);
    case 'enum':
      return enumOf(enumWords(field.enum), add.description);
    case 'message':
      return messageValue(field.message, add);
    case 'list': {
      const r = rules?.type.case === 'repeated' ? rules.type.value : undefined;
      const itemAdd = add.items;
      const items =
        itemAdd !== undefined && isSchema(itemAdd)
          ? itemAdd
          : field.listKind === 'scalar'
            ? scalarValue(field.scalar, r?.items, itemAdd ?? {})
            : field.listKind === 'enum'
              ? enumOf(enumWords(field.enum), itemAdd?.description)
              : messageValue(field.message, itemAdd ?? {});
      return array(items, {
        ...(r !== undefined && r.minItems > 0n ? { min: Number(r.minItems) } : {}),
        ...(r !== undefined && r.maxItems > 0n ? { max: Number(r.maxItems) } : {}),
        ...(r?.unique ? { unique: true } : {}),
        ...(add.description === undefined ? {} : { description: add.description }),
      });
    }
    case 'map': {
      const values =
        field.mapKind === 'scalar'
          ? scalarValue(field.scalar, undefined, {})
          : field.mapKind === 'enum'
            ? enumOf(enumWords(field.enum))
            : messageValue(field.message, {});
      return mapOf(values, add.description);
    }
  }
}

function messageValue(desc: DescMessage, add: FieldAdditions): Schema {
  if (desc.typeName === 'google.protobuf.Struct') return anyObject(add.description);
  // The JSON mapping writes the other well-known types in shapes of their own (a Timestamp as
  // text): their fields are no arguments.
  if (desc.typeName.startsWith('google.protobuf.')) {
    throw new Error(`${desc.typeName} has no derived input schema; give the field a schema of the row's own`);
  }
  return objectOf(desc, add.fields ?? {}, new Set(), new Set(), add.description);
}

function objectOf(
  desc: DescMessage,
  overrides: InputOverrides,
  fixed: ReadonlySet<string>,
  omitted: ReadonlySet<string>,
  description: string | undefined,
): Schema<Record<string, unknown>> {
  const names = new Set(desc.fields.map(toolFieldName));
  for (const name of [...Object.keys(overrides), ...omitted]) {
    if (!names.has(name)) throw new Error(`${desc.typeName} has no field ${name} to override or omit`);
  }
  const shape: Record<string, Schema> = {};
  const required: string[] = [];
  for (const field of desc.fields) {
    const name = toolFieldName(field);
    if (fixed.has(name)) continue;
    if (omitted.has(name)) {
      // Never sent, it must be a field the service takes unset; one its rules require would make
      // every call of the tool a refusal.
      if (isRequired(field, undefined))
        throw new Error(`${desc.typeName}.${field.name} is required: it cannot be omitted`);
      continue;
    }
    const override = overrides[name];
    shape[name] = fieldSchema(field, override);
    const additions = override === undefined || isSchema(override) ? undefined : override;
    if (isRequired(field, additions)) required.push(name);
  }
  return object(shape, required, description) as Schema<Record<string, unknown>>;
}

/**
 * inputFromRequest is an RPC tool's input schema: one argument per field of the request `message`
 * (by its tool name) that the route does not fix nor the row omit, typed and bounded by its rules,
 * with what the row adds or replaces per field.
 */
export function inputFromRequest(
  message: DescMessage,
  overrides: InputOverrides = {},
  options: InputOptions = {},
): Schema<Record<string, unknown>> {
  return objectOf(
    message,
    overrides,
    new Set(Object.keys(options.fixed ?? {})),
    new Set(options.omit ?? []),
    options.description,
  );
}
