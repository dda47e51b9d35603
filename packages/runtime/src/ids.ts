/** Identifiers as the services accept them. */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `text` is a UUID (any version, either case). */
export function isUuid(text: string): boolean {
  return UUID.test(text);
}
