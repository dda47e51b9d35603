/**
 * A check's verdict on a page: against the baseline's title and body text, or, for a source with
 * literal phrases, whether each phrase is present and whether that changed. The evidence keeps
 * short excerpts only, so an observation stays small whatever the page.
 */
import { textLength } from '@adsmcp/runtime/text';
import { diffWords } from 'diff';
import { clip, clipStart, isLowSurrogate } from './code-points.ts';
import { normaliseText, type PageText } from './page-text.ts';

export const EXCERPT_MAX = 200;
export const CONTEXT_MAX = 60;
export const LITERAL_EXCERPT_MAX = 160;
/** Body changes shown per observation; body_change_count has them all. */
export const CHANGES_SHOWN = 5;
/** Bounds on the word diff: past them the change is shown as one span (see spanChange). */
const DIFF_LIMITS = { maxEditLength: 2_000, timeout: 250 };

export interface TextChange {
  removed: string;
  added: string;
  context: string;
}

export interface LiteralState {
  phrase: string;
  present: boolean;
  /** Presence in the baseline; undefined for the baseline itself. */
  wasPresent?: boolean;
  changed: boolean;
  excerpt: string;
}

/** What the baseline keeps of a literal: the phrase as given and whether it was found. */
export interface BaselineLiteral {
  phrase: string;
  present: boolean;
}

export interface Baseline {
  title: string;
  text: string;
  literals: BaselineLiteral[] | null;
}

export interface Comparison {
  outcome: 'baseline' | 'unchanged' | 'changed';
  summary: string;
  titleChanged: boolean;
  bodyChanged: boolean;
  baselineTitle?: string;
  bodyChanges: TextChange[];
  bodyChangeCount: number;
  literals: LiteralState[];
}

const quote = (s: string) => `“${clip(s, 60)}”`;

/** The page as one searchable text: title, then body. */
const searchable = (page: PageText) => (page.title ? `${page.title} ${page.text}` : page.text);

/** The text around the first occurrence of `needle` in `haystack` (both normalised). */
function excerptAround(haystack: string, needle: string): string {
  const at = haystack.indexOf(needle);
  if (at < 0) return '';
  const room = Math.max(0, Math.floor((LITERAL_EXCERPT_MAX - textLength(needle)) / 2));
  // Cut between characters, never inside a surrogate pair; clip bounds the code points.
  let start = Math.max(0, at - room);
  if (start > 0 && isLowSurrogate(haystack, start)) start--;
  let end = at + needle.length + room;
  if (end < haystack.length && isLowSurrogate(haystack, end)) end++;
  const excerpt = haystack.slice(start, end);
  return clip(`${start > 0 ? '…' : ''}${excerpt}`, LITERAL_EXCERPT_MAX);
}

/** literalStates finds each phrase (normalised like the page) in the page's title and text. */
export function literalStates(page: PageText, phrases: readonly string[]): LiteralState[] {
  const haystack = searchable(page);
  return phrases.map((phrase) => {
    const excerpt = excerptAround(haystack, normaliseText(phrase));
    return { phrase, present: excerpt !== '', changed: false, excerpt };
  });
}

/** When the word diff gives up: the one span between the common prefix and the common suffix. */
function spanChange(before: string, after: string): TextChange {
  let start = 0;
  while (start < before.length && start < after.length && before[start] === after[start]) start++;
  let end = 0;
  while (
    end < before.length - start &&
    end < after.length - start &&
    before[before.length - 1 - end] === after[after.length - 1 - end]
  ) {
    end++;
  }
  // The common prefix and suffix end between characters, never inside a surrogate pair.
  if (start > 0 && isLowSurrogate(before, start)) start--;
  if (end > 0 && isLowSurrogate(before, before.length - end)) end--;
  return {
    removed: clip(before.slice(start, before.length - end), EXCERPT_MAX),
    added: clip(after.slice(start, after.length - end), EXCERPT_MAX),
    context: clipStart(before.slice(0, start), CONTEXT_MAX),
  };
}

/** bodyChanges lists the places where `after` differs from `before`, in order. */
export function bodyChanges(before: string, after: string): TextChange[] {
  if (before === after) return [];
  const parts = diffWords(before, after, DIFF_LIMITS);
  if (parts === undefined) return [spanChange(before, after)];
  const changes: TextChange[] = [];
  let context = '';
  let current: { removed: string; added: string; context: string } | undefined;
  for (const part of parts) {
    if (!part.added && !part.removed) {
      if (current) changes.push(current);
      current = undefined;
      context = part.value;
      continue;
    }
    current ??= { removed: '', added: '', context: clipStart(context.trim(), CONTEXT_MAX) };
    if (part.added) current.added += part.value;
    else current.removed += part.value;
  }
  if (current) changes.push(current);
  return changes.map((c) => ({
    removed: clip(c.removed.trim(), EXCERPT_MAX),
    added: clip(c.added.trim(), EXCERPT_MAX),
    context: c.context,
  }));
}

function textSummary(titleChanged: boolean, count: number): string {
  const parts: string[] = [];
  if (titleChanged) parts.push('the title changed');
  if (count > 0) parts.push(`the body text changed in ${count} place${count === 1 ? '' : 's'}`);
  return parts.length === 0 ? 'no change since the baseline' : `${parts.join('; ')} since the baseline`;
}

function literalSummary(states: readonly LiteralState[]): string {
  const changed = states.filter((s) => s.changed);
  if (changed.length === 0) {
    const present = states.filter((s) => s.present).length;
    return `no watched phrase changed since the baseline (${present} of ${states.length} present)`;
  }
  return changed
    .map((s) => `${quote(s.phrase)} is now ${s.present ? 'present' : 'absent'}`)
    .join('; ')
    .concat(' (against the baseline)');
}

/**
 * baselineOf is what later checks of a source compare with: the first page read since the url or
 * the literals were set.
 */
export function baselineOf(page: PageText, literals: readonly string[]): Baseline {
  return {
    title: page.title,
    text: page.text,
    literals:
      literals.length === 0
        ? null
        : literalStates(page, literals).map(({ phrase, present }) => ({ phrase, present })),
  };
}

/** firstComparison describes the page that becomes the baseline. */
export function firstComparison(page: PageText, literals: readonly string[]): Comparison {
  const states = literals.length === 0 ? [] : literalStates(page, literals);
  const present = states.filter((s) => s.present).length;
  return {
    outcome: 'baseline',
    summary:
      literals.length === 0
        ? `baseline taken: ${page.text.length} characters of text${page.title ? `, title ${quote(page.title)}` : ''}`
        : `baseline taken: ${present} of ${literals.length} watched phrases present`,
    titleChanged: false,
    bodyChanged: false,
    bodyChanges: [],
    bodyChangeCount: 0,
    literals: states,
  };
}

/**
 * compareWithBaseline judges a page against the baseline: for a source with literals, by each
 * phrase's presence; otherwise by the normalised title and body text.
 */
export function compareWithBaseline(
  page: PageText,
  baseline: Baseline,
  literals: readonly string[],
): Comparison {
  if (literals.length > 0) {
    const before = new Map((baseline.literals ?? []).map((l) => [l.phrase, l.present]));
    const states = literalStates(page, literals).map((s) => {
      const wasPresent = before.get(s.phrase) ?? false;
      return { ...s, wasPresent, changed: wasPresent !== s.present };
    });
    const changed = states.some((s) => s.changed);
    return {
      outcome: changed ? 'changed' : 'unchanged',
      summary: literalSummary(states),
      titleChanged: false,
      bodyChanged: false,
      bodyChanges: [],
      bodyChangeCount: 0,
      literals: states,
    };
  }
  const titleChanged = page.title !== baseline.title;
  const changes = bodyChanges(baseline.text, page.text);
  return {
    outcome: titleChanged || changes.length > 0 ? 'changed' : 'unchanged',
    summary: textSummary(titleChanged, changes.length),
    titleChanged,
    bodyChanged: changes.length > 0,
    ...(titleChanged ? { baselineTitle: baseline.title } : {}),
    bodyChanges: changes.slice(0, CHANGES_SHOWN),
    bodyChangeCount: changes.length,
    literals: [],
  };
}
