/**
 * Whether a value an import sends looks like a person's contact details: an email address or a
 * phone number, written plainly, in full-width or other compatibility forms, or spelled out.
 *
 * The value is first folded as a reader would read it: NFKC turns ｊｏｈｎ＠ｅｘａｍｐｌｅ．ｃｏｍ,
 * the small commercial at ﹫ and full-width digits into ASCII, and invisible format characters
 * (zero-width spaces, soft hyphens, bidi controls) are dropped, since they can split an address
 * without changing what is read.
 *
 * An email address is local-part, at, domain, dot, top-level domain (two or more letters), where
 * "at" is @ (spaces around it allowed), or (at) [at] {at} <at> [@] (@), or the word at between
 * spaces, underscores or hyphens (john at example, john_at_example), and "dot" is a dot, or (dot)
 * [dot] [.] (.), or the word dot between spaces, underscores or hyphens. In free text (a name, an
 * attribution) the bare word "at" counts only with a spelled-out dot (john at example dot com),
 * so that "last click at shop.example" is still a sentence; in an id, where no sentence belongs,
 * "john at example.com" and "john @ example . com" count too.
 *
 * A phone number is 7 to 15 digits (E.164's most) written
 * - as the whole value, with a leading + or with separators (spaces, dots, hyphens, parentheses):
 *   +4930123456, 030 1234 5678, 555.123.4567; a bare run of digits is an order number, not a
 *   phone number, and a value starting with a date (2026-10-12-0001) is not one either;
 * - inside other text: after a + (call +44 20 7946 0958), with an area code in parentheses
 *   ((555) 123-4567), after tel, phone, mobile or fax (tel:5551234567), or as three to five groups
 *   of digits joined by one kind of separator and standing apart from the text around it
 *   (call 555-123-4567 now, lead 030 123 45 67), or as two groups whose first begins with the
 *   trunk prefix 0 (030 1234567). Dates (2026-11-20, 20.11.2026) and numbers grouped in thousands
 *   (12 345 678) are not phone numbers, and a group attached to letters (ORD-555-123-4567) is part
 *   of an id.
 *
 * A formatting rule and not a phone-number library: libphonenumber can tell a possible number
 * only for a known country, and an import carries none; without one it recognises only numbers
 * written with +, which the rule above already finds, and as a validator it would take many
 * plain order numbers for valid phone numbers.
 */

/** Where a value sits: an id refuses more spelled-out forms than free text does. */
export type PersonalDataField = 'id' | 'text';

/** Format characters, dropped; private-use characters, dropped so that none passes for SPELLED_DOT. */
const DROPPED = /[\p{Cf}\p{Co}]/gu;

/** Stands for a spelled-out dot while the text is checked (a private-use character). */
const SPELLED_DOT = '\uE000';

/** (at) [at] {at} <at> [@] (@), and @ with spaces around it. */
const AT_FORMS = /\s*[[({<]\s*(?:at|@)\s*[\])}>]\s*|\s*@\s*/giu;
/** The word at between spaces, underscores or hyphens. */
const AT_WORD = /[\s_-]+at[\s_-]+/giu;
/** (dot) [dot] {dot} <dot> [.] (.), and the word dot between spaces, underscores or hyphens. */
const DOT_FORMS = /\s*[[({<]\s*(?:dot|\.)\s*[\])}>]\s*|[\s_-]+dot[\s_-]+/giu;
/** A dot with spaces around it. */
const DOT_SPACED = /\s*\.\s*/gu;

/** local@domain.tld once the forms above are replaced; a spelled-out dot counts as a dot. */
const EMAIL = /[^\s@]+@[^\s@]*[^\s@.\uE000][.\uE000]\p{L}{2,}/u;
/** The same, with at least one spelled-out dot in the domain. */
const EMAIL_SPELLED_DOT = /[^\s@]+@(?=[^\s@]*\uE000)[^\s@]*[^\s@.\uE000][.\uE000]\p{L}{2,}/u;

function hasEmailAddress(text: string, field: PersonalDataField): boolean {
  const forms = text.replace(DOT_FORMS, SPELLED_DOT).replace(AT_FORMS, '@');
  if (EMAIL.test(forms)) return true;
  const words = forms.replace(AT_WORD, '@');
  if (EMAIL_SPELLED_DOT.test(words)) return true;
  return field === 'id' && EMAIL.test(words.replace(DOT_SPACED, '.'));
}

/** A whole value of digits and phone punctuation: +49 30 1234567, (555) 123-4567, 555.123.4567. */
const PHONE_WHOLE = /^\+?[\d\s().-]+$/;

/** An international number inside other text: +, then digits and phone punctuation. */
const PHONE_INTERNATIONAL = /(?:^|[^\p{L}\p{N}_+])\+\d[\d\s().-]{5,}\d/gu;
/** An area code in parentheses, then the number: (555) 123-4567, (030) 1234567. */
const PHONE_AREA_CODE = /(?:^|[^\p{L}\p{N}])\(\d{2,5}\)[\s.-]?\d{2,5}(?:[\s.-]?\d{2,5})*/gu;
/** A number after a word that names it: tel:5551234567, phone 555 123 4567. */
const PHONE_NAMED = /(?<![\p{L}\p{N}])(?:tel|phone|mobile|fax)\s*[:.=#-]?\s*\+?\d[\d\s().-]*\d/giu;
/** Groups of digits joined by one kind of separator, standing apart from the text around them. */
const PHONE_GROUPS =
  /(?<![\p{L}\p{N}_.-])\d{2,5}(?:([ .-])\d{2,8})(?:\1\d{2,8}){0,3}(?![\p{L}\p{N}_]|[.-]\d)/gu;

/** A run that starts with a date: 2026-11-20, 2026 11 20-0001, 20.11.2026. */
const DATE_GROUPS =
  /^(?:(?:19|20)\d{2}[ .-]\d{1,2}[ .-]\d{1,2}|\d{1,2}[ .-]\d{1,2}[ .-](?:19|20)\d{2})(?:[ .-]|$)/;
/** Numbers grouped in thousands: 12 345 678, 1.234.567 (a trunk prefix 0 never starts one). */
const THOUSANDS = /^[1-9]\d{0,2}(?:([ .])\d{3})+$/;

const digitCount = (text: string) => text.replace(/\D/g, '').length;
const phoneLength = (text: string) => {
  const n = digitCount(text);
  return n >= 7 && n <= 15;
};

function groupsLookLikePhone(run: string): boolean {
  if (!phoneLength(run) || DATE_GROUPS.test(run) || THOUSANDS.test(run)) return false;
  const groups = run.split(/[ .-]/);
  return groups.length >= 3 || (groups[0] ?? '').startsWith('0');
}

function hasPhoneNumber(text: string): boolean {
  const whole = text.trim();
  const punctuated = whole.startsWith('+') || /[\s().-]/.test(whole);
  if (PHONE_WHOLE.test(whole) && punctuated && phoneLength(whole) && !DATE_GROUPS.test(whole)) return true;
  for (const pattern of [PHONE_INTERNATIONAL, PHONE_AREA_CODE, PHONE_NAMED])
    for (const m of whole.matchAll(pattern)) if (phoneLength(m[0])) return true;
  for (const m of whole.matchAll(PHONE_GROUPS)) if (groupsLookLikePhone(m[0])) return true;
  return false;
}

/**
 * What personal data `value` looks like, if any (see the module comment). `field` says whether
 * the value is an id or free text.
 */
export function personalDataIn(
  value: string,
  field: PersonalDataField = 'text',
): 'an email address' | 'a phone number' | undefined {
  const text = value.normalize('NFKC').replace(DROPPED, '');
  if (hasEmailAddress(text, field)) return 'an email address';
  if (hasPhoneNumber(text)) return 'a phone number';
  return undefined;
}
