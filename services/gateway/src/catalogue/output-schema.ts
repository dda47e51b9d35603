/**
 * Tool result shapes (MCP `outputSchema`). A result routed from a service RPC has the shape of
 * the RPC's response message, derived here from its descriptor, so the published shape and the
 * mapping in rpc-mapping.ts cannot drift apart. Every published shape also admits the tool-error
 * shape, since an error result carries structured content too.
 */

import { tool_field as toolFieldOption } from '@adsmcp/proto/adsmcp/v1/tool_pb';
import { enumWords } from '@adsmcp/runtime/enum-words';
import {
  type DescEnum,
  type DescField,
  type DescMessage,
  getOption,
  hasOption,
  ScalarType,
} from '@bufbuild/protobuf';
import { FeatureSet_FieldPresence } from '@bufbuild/protobuf/wkt';
import type { JsonSchema } from './schema.ts';

/** A tool error: `error.code` for programs, `error.message` for people, and any extra fields. */
export const TOOL_ERROR: JsonSchema = {
  type: 'object',
  properties: {
    error: {
      type: 'object',
      properties: { code: { type: 'string' }, message: { type: 'string' } },
      required: ['code', 'message'],
    },
  },
  required: ['error'],
  additionalProperties: false,
};

/**
 * How a tool names `field`: a field that replaced another on the wire (a type change takes a new
 * number and name, docs/architecture.md, "Enums, absence and wire evolution") declares the word
 * its tools keep and the number it replaced, with the `(adsmcp.v1.tool_field)` option.
 */
function toolField(field: DescField): { name: string; number: number } | undefined {
  if (!hasOption(field, toolFieldOption)) return undefined;
  const { name, replaces } = getOption(field, toolFieldOption);
  return { name, number: replaces };
}

/** The name a tool shows for `field`: its proto name unless its tool_field option renames it. */
export function toolFieldName(field: DescField): string {
  return toolField(field)?.name ?? field.name;
}

/** Where `field` stands in a result (proto JSON writes fields by number): its number, or the one it replaced. */
export function toolFieldNumber(field: DescField): number {
  return toolField(field)?.number ?? field.number;
}

/** An enum as tools show it: one of its words (enum-words.ts); the zero value has none. */
export function enumSchema(desc: DescEnum): JsonSchema {
  return { type: 'string', enum: enumWords(desc) };
}

/** Whether a field has explicit presence: unset, it is absent from the JSON, and published as null. */
export function hasPresence(field: DescField): boolean {
  return (
    (field.fieldKind === 'scalar' || field.fieldKind === 'enum' || field.fieldKind === 'message') &&
    field.presence === FeatureSet_FieldPresence.EXPLICIT
  );
}

function scalarSchema(type: ScalarType): JsonSchema {
  switch (type) {
    case ScalarType.BOOL:
      return { type: 'boolean' };
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return { type: 'number' };
    case ScalarType.INT32:
    case ScalarType.UINT32:
    case ScalarType.SINT32:
    case ScalarType.FIXED32:
    case ScalarType.SFIXED32:
      return { type: 'integer' };
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.SINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      // The proto JSON mapping writes 64-bit integers (money in micros) as decimal strings, exact.
      return { type: 'string', pattern: '^-?[0-9]+$' };
    default:
      return { type: 'string' };
  }
}

/**
 * The JSON Schema of a message as resultOf writes it: its tools' field names, every field present,
 * an enum field one of its words (null only where the field has presence).
 */
export function messageSchema(desc: DescMessage): JsonSchema {
  switch (desc.typeName) {
    case 'google.protobuf.Struct':
      return { type: 'object' };
    case 'google.protobuf.Value':
      return {};
    case 'google.protobuf.ListValue':
      return { type: 'array' };
  }
  const properties: Record<string, JsonSchema> = {};
  for (const field of desc.fields) {
    const schema = fieldSchema(field);
    properties[toolFieldName(field)] = hasPresence(field) ? { anyOf: [schema, { type: 'null' }] } : schema;
  }
  return {
    type: 'object',
    properties,
    required: desc.fields.map(toolFieldName),
    additionalProperties: false,
  };
}

function fieldSchema(field: DescField): JsonSchema {
  switch (field.fieldKind) {
    case 'scalar':
      return scalarSchema(field.scalar);
    case 'enum':
      return enumSchema(field.enum);
    case 'message':
      return messageSchema(field.message);
    case 'list':
      return {
        type: 'array',
        items:
          field.listKind === 'message'
            ? messageSchema(field.message)
            : field.listKind === 'enum'
              ? enumSchema(field.enum)
              : scalarSchema(field.scalar),
      };
    case 'map':
      return {
        type: 'object',
        additionalProperties:
          field.mapKind === 'message'
            ? messageSchema(field.message)
            : field.mapKind === 'enum'
              ? enumSchema(field.enum)
              : scalarSchema(field.scalar),
      };
  }
}

/**
 * publishedOutput is what `tools/list` shows as a tool's `outputSchema`: the result's shape or the
 * tool-error shape. A client that validates error results against the schema (some do) accepts both.
 */
export function publishedOutput(result: JsonSchema): JsonSchema & { type: 'object' } {
  return { type: 'object', anyOf: [result, TOOL_ERROR] };
}
