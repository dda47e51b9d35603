/**
 * What `npm run admin -- approve` shows before it asks: the change's summary, each field before
 * and after, the exact request and its digest, with every invisible character spelled out so
 * that a terminal shows what will be applied and nothing can hide or reorder it.
 */
import type { Change } from '@adsmcp/proto/changes/v1/changes_pb';
import { changeRows } from './domain/change-diff.ts';

/** Control and format characters (Cc, Cf): they hide or reorder text, so a name may not hold them. */
export const INVISIBLE = /[\p{Cc}\p{Cf}]/u;

export function codePoint(ch: string): string {
  return `U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
}

/** Text from an agent or the platform as a terminal should show it: invisible characters spelled out. */
export function visible(text: string): string {
  return text.replace(new RegExp(INVISIBLE.source, 'gu'), (c) => `<${codePoint(c)}>`);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** What a person approves: the summary, each field before and after, the exact request, the digest. */
export function reviewText(c: Change): string {
  const body = parseJson(c.operation?.bodyJson ?? '');
  const before = parseJson(c.targetBeforeJson);
  const show = (v: unknown) => (v === undefined ? '(unset)' : JSON.stringify(v));
  const lines = [
    `Change ${c.changeId} on account ${c.accountId}, prepared ${c.preparedAt} by ${c.preparedBy}`,
    `Summary: ${c.summary}`,
    'What changes (before, as prepared -> after):',
    ...changeRows(c.operation?.path ?? '', before, body).map(
      (r) => `  ${r.field}: ${show(r.before)} -> ${show(r.after)}`,
    ),
    `Exact request: ${c.operation?.method ?? ''} ${c.operation?.path ?? ''}`,
    ...(body === undefined ? [] : JSON.stringify(body, null, 2).split('\n')).map((l) => `  ${l}`),
    `Digest: ${c.digest}`,
  ];
  return lines.map(visible).join('\n');
}
