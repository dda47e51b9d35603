/**
 * The mechanical mapping between tool arguments and RPC messages. Proto field names equal the
 * tool argument names, so validated arguments become a request by the proto JSON mapping
 * (which accepts the snake_case field names), and a response becomes a tool result the same
 * way back. No tool re-types its arguments by hand.
 */
import { type DescMessage, fromJson, type JsonValue, type MessageShape, toJson } from '@bufbuild/protobuf';
import { hasPresence } from './output-schema.ts';

/** requestFrom builds an RPC request from validated tool arguments. */
export function requestFrom<Desc extends DescMessage>(
  schema: Desc,
  args: Record<string, unknown>,
): MessageShape<Desc> {
  return fromJson(schema, args as JsonValue);
}

/**
 * resultOf turns an RPC response into a tool result: proto field names, every field present
 * (empty lists and zero values included, and an unset optional field as null, so a result's
 * shape does not depend on its values). 64-bit integers (money in micros) come out as decimal
 * strings, exact. The shape is the one output-schema.ts publishes for the message.
 */
export function resultOf<Desc extends DescMessage>(
  schema: Desc,
  message: MessageShape<Desc>,
): Record<string, unknown> {
  const json = toJson(schema, message, { useProtoFieldName: true, alwaysEmitImplicit: true });
  return withNulls(schema, json as Record<string, unknown>);
}

/** Fills the unset fields that have presence with null, in `json` and every message inside it. */
function withNulls(desc: DescMessage, json: Record<string, unknown>): Record<string, unknown> {
  if (desc.typeName.startsWith('google.protobuf.')) return json;
  for (const field of desc.fields) {
    const value = json[field.name];
    if (value === undefined) {
      if (hasPresence(field)) json[field.name] = null;
      continue;
    }
    if (field.fieldKind === 'message') withNulls(field.message, value as Record<string, unknown>);
    if (field.fieldKind === 'list' && field.listKind === 'message') {
      for (const item of value as Record<string, unknown>[]) withNulls(field.message, item);
    }
  }
  return json;
}

/** The request as tool arguments again: what the round-trip test compares with the input. */
export function argumentsOf<Desc extends DescMessage>(
  schema: Desc,
  message: MessageShape<Desc>,
): Record<string, unknown> {
  return toJson(schema, message, { useProtoFieldName: true }) as Record<string, unknown>;
}
