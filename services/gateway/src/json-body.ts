/**
 * The gateway's JSON body parser. A body nested deeper than MAX_JSON_DEPTH is refused, so no later
 * walk of it (ours, the SDK's, a schema validator's) can run out of stack. Properties that could
 * reach an object's prototype (`__proto__`, and `constructor` holding `prototype`) are refused
 * with a message that names them, rather than dropped silently; malformed JSON, and bytes that are
 * not UTF-8, are refused as such.
 */

/** How deeply objects and arrays may nest in a request body; no MCP message comes close. */
export const MAX_JSON_DEPTH = 64;

export class BodyError extends Error {
  constructor(
    message: string,
    /** The JSON-RPC error code: -32700 for malformed JSON, -32600 for a refused request. */
    readonly rpcCode: number,
  ) {
    super(message);
  }
  readonly statusCode = 400;
}

type Refusal = { tooDeep: true } | { key: string };

const isObject = (v: unknown): v is object => typeof v === 'object' && v !== null;

/** An object or array still to be looked at, and where it stands in the body. */
interface Pending {
  value: object;
  depth: number;
  parent: Pending | undefined;
  /** Its key in its parent: a property name, or an index in an array. */
  key: string | number;
}

/** The path of `key` within `at` (`params.arguments[0].__proto__`), made only for a refusal. */
function pathOf(at: Pending, key: string): string {
  const segments: (string | number)[] = [key];
  for (let p: Pending | undefined = at; p?.parent !== undefined; p = p.parent) segments.push(p.key);
  let path = '';
  for (const s of segments.reverse()) {
    if (typeof s === 'number') path += `[${s}]`;
    else path = path === '' ? s : `${path}.${s}`;
  }
  return path;
}

/**
 * The first reason to refuse a parsed body, found without recursion (the body is untrusted).
 * Only objects and arrays are kept to be looked at, and a path is made only for what is refused:
 * checking a body of 10,000 audience members took about 2.4 ms beside JSON.parse's 1.7 when a
 * path was made for every value.
 */
function refusal(root: unknown): Refusal | undefined {
  if (!isObject(root)) return undefined;
  const pending: Pending[] = [{ value: root, depth: 1, parent: undefined, key: '' }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { value, depth } = next;
    if (depth > MAX_JSON_DEPTH) return { tooDeep: true };
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const v: unknown = value[i];
        if (isObject(v)) pending.push({ value: v, depth: depth + 1, parent: next, key: i });
      }
      continue;
    }
    for (const k of Object.keys(value)) {
      const v: unknown = (value as Record<string, unknown>)[k];
      if (k === '__proto__') return { key: pathOf(next, k) };
      if (k === 'constructor' && isObject(v) && 'prototype' in v)
        return { key: `${pathOf(next, k)}.prototype` };
      if (isObject(v)) pending.push({ value: v, depth: depth + 1, parent: next, key: k });
    }
  }
  return undefined;
}

// A byte order mark is kept, as Buffer#toString kept it, so that offsets count every byte sent.
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const lenientUtf8 = new TextDecoder('utf-8', { ignoreBOM: true });

/**
 * The byte offset of the first sequence that is not UTF-8 in `bytes`, which the strict decoder
 * refused. The lenient decoder puts one U+FFFD where each bad sequence starts (WHATWG Encoding's
 * decoder, which the strict one also follows), so the offset is the UTF-8 length of the text before
 * the first U+FFFD that the bytes do not spell as EF BF BD themselves.
 */
function firstInvalidOffset(bytes: Uint8Array): number {
  const text = lenientUtf8.decode(bytes);
  let offset = 0;
  let from = 0;
  for (let at = text.indexOf('\uFFFD'); at !== -1; at = text.indexOf('\uFFFD', from)) {
    offset += Buffer.byteLength(text.slice(from, at), 'utf8');
    if (bytes[offset] !== 0xef || bytes[offset + 1] !== 0xbf || bytes[offset + 2] !== 0xbd) return offset;
    offset += 3;
    from = at + 1;
  }
  return offset;
}

/**
 * decodeUtf8Body reads a body as UTF-8, refusing it when any byte sequence is not UTF-8: a decoder
 * that replaced it with U+FFFD would save text the client never sent.
 */
export function decodeUtf8Body(bytes: Uint8Array): string {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw new BodyError(
      `Parse error: the body is not valid UTF-8 (the first invalid byte sequence starts at byte offset ${firstInvalidOffset(bytes)}); JSON must be sent as UTF-8`,
      -32700,
    );
  }
}

/** parseJsonBody parses a request body, or throws a BodyError that says what is wrong. */
export function parseJsonBody(body: Uint8Array | string): unknown {
  const text = typeof body === 'string' ? body : decodeUtf8Body(body);
  if (text.trim() === '')
    throw new BodyError('Parse error: the body is empty; send a JSON-RPC message', -32700);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new BodyError(`Parse error: the body is not valid JSON (${(err as Error).message})`, -32700);
  }
  const refused = refusal(value);
  if (refused === undefined) return value;
  if ('tooDeep' in refused) {
    throw new BodyError(
      `Invalid Request: the body nests objects and arrays deeper than the limit of ${MAX_JSON_DEPTH} levels`,
      -32600,
    );
  }
  throw new BodyError(
    `Invalid Request: the property "${refused.key}" is not accepted (it could alter object prototypes)`,
    -32600,
  );
}
