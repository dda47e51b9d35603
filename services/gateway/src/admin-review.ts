/**
 * What `npm run admin -- approve` shows before it asks: the change's summary, each field before
 * and after, the exact request and its digest, with every invisible character spelled out so
 * that a terminal shows what will be applied and nothing can hide or reorder it.
 */
import type { Change } from '@adsmcp/proto/changes/v1/changes_pb';
import { changeRows } from '@adsmcp/runtime/change-diff';
import { showHidden } from '@adsmcp/runtime/text';

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
  return lines.map((line) => showHidden(line)).join('\n');
}
