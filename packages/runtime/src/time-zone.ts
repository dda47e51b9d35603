/**
 * IANA time zone names as an account keeps them. The name is kept as given, spelled as IANA
 * spells it ("asia/kathmandu" -> "Asia/Kathmandu", "utc" -> "UTC"): Node 20's ICU would rename
 * current names to the aliases CLDR still calls canonical (Asia/Kathmandu to Asia/Katmandu,
 * Europe/Kyiv to Europe/Kiev, Asia/Kolkata to Asia/Calcutta), which an account's owner would not
 * recognise. Temporal's rules (the temporal-polyfill) keep the name and fix only its case.
 */
import { Temporal } from 'temporal-polyfill';

/** The ICU id of `name` (aliases resolved), or undefined when ICU does not know it. */
function icuId(name: string): string | undefined {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

/**
 * ianaTimeZone returns `name` spelled as IANA spells it, or undefined when it is not a time zone
 * the runtime knows (offsets such as +01:00 are not names, and are refused too).
 */
export function ianaTimeZone(name: string): string | undefined {
  if (name === '' || icuId(name) === undefined) return undefined;
  try {
    return Temporal.Now.zonedDateTimeISO(name).timeZoneId;
  } catch {
    return undefined;
  }
}

/** Whether two names are the same time zone (Asia/Kathmandu and Asia/Katmandu are). */
export function sameTimeZone(a: string, b: string): boolean {
  const id = icuId(a);
  return id !== undefined && id === icuId(b);
}
