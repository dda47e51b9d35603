/** Identifiers as the services accept them. */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `text` is a UUID (any version, either case). */
export function isUuid(text: string): boolean {
  return UUID.test(text);
}

/**
 * `text` as the services keep an id: a UUID in lower case (as PostgreSQL's uuid type gives it
 * back), anything else as it is. Ids kept in text columns are kept so, so that one id typed in
 * either case names one thing.
 */
export function canonicalId(text: string): string {
  return isUuid(text) ? text.toLowerCase() : text;
}

/**
 * A bare hostname: dot-separated labels of lowercase letters, digits and inner hyphens, each 1 to
 * 63 characters; no scheme, port, path or trailing dot.
 */
export const HOSTNAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;
export const HOSTNAME_HINT =
  'a hostname such as example.com: lowercase letters, digits, hyphens and dots, without scheme, port or path';
