/**
 * Text PostgreSQL can never store: its text and jsonb types hold no U+0000, and jsonb no lone
 * surrogate (half of a UTF-16 pair). Input that holds either is refused where it comes in, naming
 * where, instead of failing the statement it would reach: OAuth's requests and registrations,
 * the dashboard's forms and query strings.
 */

const NUL = '\u0000';

/** A lone surrogate: half of a UTF-16 pair without its other half, not a character of any text. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** What in `text` PostgreSQL's text and jsonb cannot hold, in words, or undefined. */
export function unstorable(text: string): string | undefined {
  if (text.includes(NUL)) return 'must not contain the character U+0000 (NUL)';
  if (LONE_SURROGATE.test(text)) return 'must be well-formed Unicode (it holds a lone surrogate)';
  return undefined;
}

/**
 * Where `value` holds a string that can never be stored (U+0000, or a lone surrogate, which
 * PostgreSQL's text and jsonb cannot hold), as a dotted path (e.g. `params.state`) and the rule
 * it breaks, or undefined.
 */
export function unstorablePath(value: unknown, path = ''): { path: string; rule: string } | undefined {
  if (typeof value === 'string') {
    const rule = unstorable(value);
    return rule === undefined ? undefined : { path, rule };
  }
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = unstorablePath(item, `${path}[${i}]`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      const at = path ? `${path}.${key}` : key;
      const rule = unstorable(key);
      if (rule !== undefined) return { path: at, rule };
      const found = unstorablePath(item, at);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/** pgAdapter returns the adapter class oidc-provider instantiates with each model's name. */
