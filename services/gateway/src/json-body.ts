/**
 * The gateway's JSON body parser. Properties that could reach an object's prototype
 * (`__proto__`, and `constructor` holding `prototype`) are refused with a message that names
 * them, rather than dropped silently; malformed JSON is refused as such.
 */

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

function forbiddenKey(value: unknown, path: string, depth: number): string | undefined {
  if (depth > 10_000 || typeof value !== 'object' || value === null) return undefined;
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) {
      const found = forbiddenKey(v, `${path}[${i}]`, depth + 1);
      if (found) return found;
    }
    return undefined;
  }
  for (const [k, v] of Object.entries(value)) {
    const at = path === '' ? k : `${path}.${k}`;
    if (k === '__proto__') return at;
    if (k === 'constructor' && typeof v === 'object' && v !== null && 'prototype' in v)
      return `${at}.prototype`;
    const found = forbiddenKey(v, at, depth + 1);
    if (found) return found;
  }
  return undefined;
}

/** parseJsonBody parses a request body, or throws a BodyError that says what is wrong. */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '')
    throw new BodyError('Parse error: the body is empty; send a JSON-RPC message', -32700);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new BodyError(`Parse error: the body is not valid JSON (${(err as Error).message})`, -32700);
  }
  const key = forbiddenKey(value, '', 0);
  if (key !== undefined) {
    throw new BodyError(
      `Invalid Request: the property "${key}" is not accepted (it could alter object prototypes)`,
      -32600,
    );
  }
  return value;
}
