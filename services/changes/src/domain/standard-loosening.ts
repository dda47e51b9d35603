/**
 * Which saves of an account standard loosen it. An agent may tighten a standard at once, but a
 * save that would let through a change the standard in force refuses waits for a person: this is
 * the one place that decides which saves those are, judged by the rules enforcement applies
 * (standards-rules.ts), so that "looser" means "some change would newly pass".
 *
 * Per rule of a `kind: standard` record:
 * - naming prefix: removing it, or changing it to one that does not start with the prefix in
 *   force (`ACME-` to `ACME-EU-` tightens: every name starting with `ACME-EU-` starts with `ACME-`);
 * - allowed domains: emptying the list (any domain would be allowed), a domain not within one
 *   listed before, and a host within one listed before but not listed by name before (listing a
 *   host exactly vouches for it as a look-alike host). Removing a domain while others stay only
 *   narrows where links may go, so it tightens. A first list where there was none tightens;
 * - UTM: dropping a required value or changing it;
 * - operating window: an earlier or removed start, a later or removed end.
 * Name, guidance and `template` are not rules; templates are not enforced, so no save or archive
 * of one loosens anything. Archiving a standard always loosens: its rules stop applying.
 */
import { asciiHost } from '@adsmcp/runtime/url-host';
import type { StandardData } from './standards-rules.ts';

const UTM_KEYS = ['utm_source', 'utm_medium', 'utm_campaign', 'utm_content', 'utm_term'] as const;

const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The domain in the form enforcement compares it in: its ASCII form, lowercase. */
const asAscii = (host: string) => asciiHost(host) ?? host.toLowerCase();

const within = (host: string, domain: string) => host === domain || host.endsWith(`.${domain}`);

function domainsOf(data: StandardData): string[] {
  return Array.isArray(data.allowed_domains) ? data.allowed_domains.map(String) : [];
}

function prefixLoosening(current: StandardData, proposed: StandardData): string[] {
  const before = text(current.naming_prefix);
  const after = text(proposed.naming_prefix);
  if (before === undefined || after === before) return [];
  if (after === undefined) return [`removes the naming prefix "${before}": names need no prefix`];
  if (after.startsWith(before)) return [];
  return [
    `changes the naming prefix from "${before}" to "${after}": names starting with "${after}" but not "${before}" would pass`,
  ];
}

function domainLoosenings(current: StandardData, proposed: StandardData): string[] {
  const before = domainsOf(current);
  if (before.length === 0) return [];
  const after = domainsOf(proposed);
  if (after.length === 0)
    return [`removes the allowed domains ${before.join(', ')}: links to any domain would pass`];
  const beforeAscii = before.map(asAscii);
  return after.flatMap((d) => {
    const host = asAscii(d);
    if (beforeAscii.includes(host)) return [];
    if (!beforeAscii.some((b) => within(host, b))) return [`adds allowed domain ${d}`];
    return [`lists ${d} by name, which vouches for it even where it looks like another host`];
  });
}

function utmLoosenings(current: StandardData, proposed: StandardData): string[] {
  const before = isObject(current.utm) ? current.utm : {};
  const after = isObject(proposed.utm) ? proposed.utm : {};
  return UTM_KEYS.flatMap((k) => {
    const was = text(before[k]);
    const now = text(after[k]);
    if (was === undefined || now === was) return [];
    if (now === undefined) return [`drops the required ${k}=${was}`];
    return [`changes the required ${k} from ${was} to ${now}`];
  });
}

const windowText = (start: string | undefined, end: string | undefined) =>
  `${start ?? 'no start'}..${end ?? 'no end'}`;

function windowLoosening(current: StandardData, proposed: StandardData): string[] {
  const start = text(current.operating_start);
  const end = text(current.operating_end);
  const nextStart = text(proposed.operating_start);
  const nextEnd = text(proposed.operating_end);
  // Dates are YYYY-MM-DD (checked when saved), so they compare as text.
  const earlier = start !== undefined && (nextStart === undefined || nextStart < start);
  const later = end !== undefined && (nextEnd === undefined || nextEnd > end);
  if (!earlier && !later) return [];
  return [`widens the operating window from ${windowText(start, end)} to ${windowText(nextStart, nextEnd)}`];
}

/**
 * standardLoosenings lists, in words, each way `proposed` lets through a change that `current`
 * (the standard in force, same kind) refuses; empty when the save only tightens or keeps it.
 */
export function standardLoosenings(kind: string, current: StandardData, proposed: StandardData): string[] {
  if (kind !== 'standard') return [];
  return [
    ...prefixLoosening(current, proposed),
    ...domainLoosenings(current, proposed),
    ...utmLoosenings(current, proposed),
    ...windowLoosening(current, proposed),
  ];
}

/** What archiving a standard lets through: every rule it has; nothing for a template. */
export function archiveLoosenings(kind: string, name: string, data: StandardData): string[] {
  if (kind !== 'standard') return [];
  const rules = standardLoosenings(kind, data, {});
  return [`archives standard "${name}": its rules stop applying`, ...rules];
}
