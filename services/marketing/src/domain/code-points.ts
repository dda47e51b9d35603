/**
 * Text cut to a number of characters as the tools count them: Unicode code points (as JSON Schema
 * does), never inside a surrogate pair, so a cut emoji is never half of one.
 */

/** The first `max` code points of `text` (all of it when shorter). */
export function firstCodePoints(text: string, max: number): string {
  // At most `max` UTF-16 units is at most `max` code points: only a longer text needs counting.
  if (text.length <= max) return text;
  let end = 0;
  for (let n = 0; n < max && end < text.length; n++) end += (text.codePointAt(end) ?? 0) > 0xffff ? 2 : 1;
  return text.slice(0, end);
}

/** The last `max` code points of `text` (all of it when shorter). */
export function lastCodePoints(text: string, max: number): string {
  if (text.length <= max) return text;
  let start = text.length;
  for (let n = 0; n < max && start > 0; n++) start -= isLowSurrogate(text, start - 1) && start > 1 ? 2 : 1;
  return text.slice(start);
}

/** Whether the UTF-16 unit at `i` is the second half of a surrogate pair. */
export function isLowSurrogate(text: string, i: number): boolean {
  const c = text.charCodeAt(i);
  return c >= 0xdc00 && c <= 0xdfff;
}

/** `text` cut to at most `max` code points, ending in … when it was cut. */
export function clip(text: string, max: number): string {
  const head = firstCodePoints(text, max);
  return head.length === text.length ? text : `${firstCodePoints(head, max - 1)}…`;
}

/** `text` cut to at most `max` code points from its end, starting with … when it was cut. */
export function clipStart(text: string, max: number): string {
  const tail = lastCodePoints(text, max);
  return tail.length === text.length ? text : `…${lastCodePoints(tail, max - 1)}`;
}

/** `text` quoted for a message: its first 40 characters, and … when there are more. */
export function quotedStart(text: string): string {
  const head = firstCodePoints(text, 40);
  return JSON.stringify(head.length === text.length ? text : `${head}…`);
}
