/**
 * The rule every URL argument is held to: an absolute URL written as it will be used. It starts
 * with its scheme and `//`, has a host, and has no white space or backslash, which the URL parser
 * would quietly encode, drop or turn into a slash, so that the URL kept (and shown to a reviewer)
 * is the one written. The gateway's `https-uri` and `http-uri` formats, ad batch rows and
 * optimization variants all apply it.
 */
const WRITTEN = {
  https: /^https:\/\/[^\s\\]+$/,
  'http-or-https': /^https?:\/\/[^\s\\]+$/,
} as const;

/** Whether `text` is an absolute URL of the given schemes, written as it will be used, with a host. */
export function isWrittenUrl(text: string, schemes: keyof typeof WRITTEN = 'https'): boolean {
  return WRITTEN[schemes].test(text) && URL.canParse(text) && new URL(text).hostname !== '';
}
