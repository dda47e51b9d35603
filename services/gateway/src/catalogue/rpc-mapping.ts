/**
 * The mechanical mapping between tool arguments and RPC messages. Proto field names equal the
 * tool argument names (but for the few fields output-schema.ts's toolFieldName renames), so
 * validated arguments become a request by the proto JSON mapping (which accepts the snake_case
 * field names), and a response becomes a tool result the same way back. No tool re-types its
 * arguments by hand.
 *
 * Enum fields are words both ways, by the one rule of enum-words.ts: a value is its name without
 * the enum's shared prefix, in lower case, and the zero value (UNSPECIFIED) is no word. In a
 * result, an unset or zero enum field with presence (`optional`) is null; a field without
 * presence is never sent at zero by its service (its proto says what its zero would mean, and a
 * value that may be absent is declared `optional`), so a zero there is refused as a bug rather
 * than shown as a word it is not.
 */
import { enumValue, enumWord, enumWords } from '@adsmcp/runtime/enum-words';
import { isRecord } from '@adsmcp/runtime/json';
import {
  type DescEnum,
  type DescField,
  type DescMessage,
  fromJson,
  type JsonValue,
  type MessageShape,
  toJson,
} from '@bufbuild/protobuf';
import { ToolFailure } from '../mcp/tool-failure.ts';
import { hasPresence, toolFieldName, toolFieldNumber } from './output-schema.ts';

/**
 * requestFrom builds an RPC request from validated tool arguments. The input schema has checked
 * them already; a word an enum lacks is still refused here, naming the argument and the words,
 * since the proto JSON mapping would otherwise refuse it as an internal error.
 */
export function requestFrom<Desc extends DescMessage>(
  schema: Desc,
  args: Record<string, unknown>,
): MessageShape<Desc> {
  return fromJson(schema, protoJson(schema, args, '') as JsonValue);
}

/** `args` with tool names as proto field names and enum words as value names, in every message. */
function protoJson(desc: DescMessage, args: Record<string, unknown>, path: string): Record<string, unknown> {
  if (desc.typeName.startsWith('google.protobuf.')) return args;
  const out: Record<string, unknown> = {};
  const byName = toolFieldsOf(desc).byName;
  for (const [key, value] of Object.entries(args)) {
    const field = byName.get(key);
    // Anything else is left to fromJson, which refuses what the message lacks.
    if (field === undefined) {
      out[key] = value;
      continue;
    }
    out[field.name] = protoValue(field, value, `${path}${key}`);
  }
  return out;
}

function protoValue(field: DescField, value: unknown, path: string): unknown {
  switch (field.fieldKind) {
    case 'enum':
      return enumName(field.enum, value, path);
    case 'message':
      return isRecord(value) ? protoJson(field.message, value, `${path}.`) : value;
    case 'list':
      if (!Array.isArray(value)) return value;
      if (field.listKind === 'enum') return value.map((v, i) => enumName(field.enum, v, `${path}[${i}]`));
      if (field.listKind === 'message')
        return value.map((v, i) => (isRecord(v) ? protoJson(field.message, v, `${path}[${i}].`) : v));
      return value;
    case 'map':
      if (!isRecord(value) || field.mapKind !== 'enum') return value;
      return Object.fromEntries(
        Object.entries(value).map(([k, v]) => [k, enumName(field.enum, v, `${path}.${k}`)]),
      );
    default:
      return value;
  }
}

/** The value name of the word `value` (null and non-strings are fromJson's to judge). */
function enumName(desc: DescEnum, value: unknown, path: string): unknown {
  if (typeof value !== 'string') return value;
  if (!enumWords(desc).includes(value)) {
    throw new ToolFailure(
      'invalid_argument',
      `${path} must be one of ${enumWords(desc).join(', ')} (got ${JSON.stringify(value)})`,
    );
  }
  return desc.value[enumValue(desc, value)]?.name;
}

/**
 * resultOf turns an RPC response into a tool result: tool field names, every field present
 * (empty lists and zero values included, and an unset optional field as null, so a result's
 * shape does not depend on its values), enum values as their words. 64-bit integers (money in
 * micros) come out as decimal strings, exact. The shape is the one output-schema.ts publishes for
 * the message.
 */
export function resultOf<Desc extends DescMessage>(
  schema: Desc,
  message: MessageShape<Desc>,
): Record<string, unknown> {
  const json = toJson(schema, message, { useProtoFieldName: true, alwaysEmitImplicit: true });
  return toolJson(schema, json as Record<string, unknown>, true);
}

/**
 * `json` (proto JSON with proto field names) as a tool shows it: renamed fields, enum words, and
 * (with `nulls`) each unset field with presence as null. The keys keep the order tools always
 * had: the set fields by number (a renamed field where the one it replaced was), then the nulls.
 */
function toolJson(desc: DescMessage, json: Record<string, unknown>, nulls: boolean): Record<string, unknown> {
  if (desc.typeName.startsWith('google.protobuf.')) return json;
  const out: Record<string, unknown> = {};
  const { inOrder, declared } = toolFieldsOf(desc);
  for (const { field, name } of inOrder) {
    const value = json[field.name];
    if (value !== undefined) out[name] = toolValue(field, value, nulls);
  }
  if (nulls) {
    for (const { field, name } of declared) {
      if (json[field.name] === undefined && hasPresence(field)) out[name] = null;
    }
  }
  return out;
}

interface ToolFields {
  /** Each field with its tool name, in the order a result lists them (by tool field number). */
  inOrder: readonly { field: DescField; name: string }[];
  /** The same in declaration order (where unset fields are listed as null). */
  declared: readonly { field: DescField; name: string }[];
  byName: ReadonlyMap<string, DescField>;
}

/** Worked out once per message type: every call maps its messages by them. */
const toolFieldsCache = new WeakMap<DescMessage, ToolFields>();

function toolFieldsOf(desc: DescMessage): ToolFields {
  let known = toolFieldsCache.get(desc);
  if (known === undefined) {
    const declared = desc.fields.map((field) => ({ field, name: toolFieldName(field) }));
    const inOrder = [...declared].sort((a, b) => toolFieldNumber(a.field) - toolFieldNumber(b.field));
    known = { inOrder, declared, byName: new Map(declared.map(({ field, name }) => [name, field])) };
    toolFieldsCache.set(desc, known);
  }
  return known;
}

function toolValue(field: DescField, value: unknown, nulls: boolean): unknown {
  switch (field.fieldKind) {
    case 'enum': {
      const word = wordOf(field.enum, value);
      if (word === null && !hasPresence(field)) {
        throw new Error(
          `${field.parent.typeName}.${field.name} is ${field.enum.values[0]?.name}, never sent`,
        );
      }
      return word;
    }
    case 'message':
      return toolJson(field.message, value as Record<string, unknown>, nulls);
    case 'list':
      if (field.listKind === 'message')
        return (value as Record<string, unknown>[]).map((v) => toolJson(field.message, v, nulls));
      if (field.listKind === 'enum') return (value as unknown[]).map((v) => listWord(field.enum, v));
      return value;
    case 'map':
      if (field.mapKind !== 'enum') return value;
      return Object.fromEntries(
        Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, listWord(field.enum, v)]),
      );
    default:
      return value;
  }
}

/** The word of a proto JSON enum value: its name, or its number when the descriptor lacks it. */
function wordOf(desc: DescEnum, value: unknown): string | null {
  const number = typeof value === 'number' ? value : desc.values.find((v) => v.name === value)?.number;
  if (number === undefined) throw new Error(`${desc.typeName} has no value ${String(value)}`);
  return enumWord(desc, number);
}

/** A repeated or map enum value has no presence: UNSPECIFIED there is a bug, refused. */
function listWord(desc: DescEnum, value: unknown): string {
  const word = wordOf(desc, value);
  if (word === null) throw new Error(`${desc.typeName} UNSPECIFIED in a list, never sent`);
  return word;
}

/** The request as tool arguments again: what the round-trip test compares with the input. */
export function argumentsOf<Desc extends DescMessage>(
  schema: Desc,
  message: MessageShape<Desc>,
): Record<string, unknown> {
  const json = toJson(schema, message, { useProtoFieldName: true });
  return toolJson(schema, json as Record<string, unknown>, false);
}
