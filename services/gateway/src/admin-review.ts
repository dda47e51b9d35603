/**
 * What `npm run admin -- approve` shows before it asks: the change's summary, each field before
 * and after, the exact request and its digest, with every invisible character spelled out, the
 * spaces a reader would miss shown as ␣, stacked marks bounded, and each URL whose host is not
 * plain ASCII shown with its host in ASCII form, the Unicode form and the warning beside it, so
 * that a terminal shows what will be applied and nothing can hide, reorder or pass for another.
 * Values are shown as the dashboard's review page shows them (dashboard/shown-values.ts).
 */
import type { Change } from '@adsmcp/proto/changes/v1/changes_pb';
import { changeRows } from '@adsmcp/runtime/change-diff';
import { SHOWN_SPACE, showHidden } from '@adsmcp/runtime/text';
import { partsText, shownJsonParts, shownSummary, shownValueParts } from './dashboard/shown-values.ts';

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
  // Each piece is made visible on its own: a summary's and a value's tokens must not be spelled again.
  const show = (v: unknown) => (v === undefined ? '(unset)' : partsText(shownValueParts(v)));
  const request =
    body === undefined ? [] : partsText(shownJsonParts(JSON.stringify(body, null, 2))).split('\n');
  const values = [
    'What changes (before, as prepared -> after):',
    ...changeRows(c.operation?.path ?? '', before, body).map(
      (r) => `  ${showHidden(r.field)}: ${show(r.before)} -> ${show(r.after)}`,
    ),
    showHidden(`Exact request: ${c.operation?.method ?? ''} ${c.operation?.path ?? ''}`),
    ...request.map((l) => `  ${l}`),
  ];
  const legend = values.some((l) => l.includes(SHOWN_SPACE)) ? [`(${SHOWN_SPACE} is a space)`] : [];
  return [
    showHidden(`Change ${c.changeId} on account ${c.accountId}, prepared ${c.preparedAt} by ${c.preparedBy}`),
    `Summary: ${shownSummary(c.summary)}`,
    ...values,
    ...legend,
    showHidden(`Digest: ${c.digest}`),
  ].join('\n');
}
