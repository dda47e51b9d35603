/**
 * The mechanical mapping between tool arguments and RPC messages. Proto field names equal the
 * tool argument names, so validated arguments become a request by the proto JSON mapping
 * (which accepts the snake_case field names), and a response becomes a tool result the same
 * way back. No tool re-types its arguments by hand.
 */
import { type DescMessage, fromJson, type JsonValue, type MessageShape, toJson } from '@bufbuild/protobuf';

/** requestFrom builds an RPC request from validated tool arguments. */
export function requestFrom<Desc extends DescMessage>(
  schema: Desc,
  args: Record<string, unknown>,
): MessageShape<Desc> {
  return fromJson(schema, args as JsonValue);
}

/**
 * resultOf turns an RPC response into a tool result: proto field names, every field present
 * (empty lists and zero values included, so a result's shape does not depend on its values).
 * 64-bit integers (money in micros) come out as decimal strings, exact.
 */
export function resultOf<Desc extends DescMessage>(
  schema: Desc,
  message: MessageShape<Desc>,
): Record<string, unknown> {
  return toJson(schema, message, { useProtoFieldName: true, alwaysEmitImplicit: true }) as Record<
    string,
    unknown
  >;
}

/** The request as tool arguments again: what the round-trip test compares with the input. */
export function argumentsOf<Desc extends DescMessage>(
  schema: Desc,
  message: MessageShape<Desc>,
): Record<string, unknown> {
  return toJson(schema, message, { useProtoFieldName: true }) as Record<string, unknown>;
}
