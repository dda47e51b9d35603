/**
 * canonicalTimeZone returns the canonical spelling of an IANA time zone ("utc" -> "UTC"), or
 * undefined when the runtime's time zone database does not know it.
 */
export function canonicalTimeZone(timeZone: string): string | undefined {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}
