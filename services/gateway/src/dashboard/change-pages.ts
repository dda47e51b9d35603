/**
 * The dashboard's review of prepared changes: what each would send, how it differs from the
 * object as it was when prepared, and Approve / Reject. Approval is recorded for the signed-in
 * person, and only for the digest they were shown.
 */

import { type Change, ChangeStatus, type LiveCheck } from '@adsmcp/proto/changes/v1/changes_pb';
import { type GetCheckedStandardsNowResponse, StandardsService } from '@adsmcp/proto/changes/v1/standards_pb';
import { changeRows } from '@adsmcp/runtime/change-diff';
import { isUuid } from '@adsmcp/runtime/ids';
import type { Principal } from '@adsmcp/runtime/principal';
import { Code, ConnectError } from '@connectrpc/connect';
import { resolutionWord, statusWord } from '../catalogue/change-view.ts';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import { actorHtml, type People } from './change-actors.ts';
import { envelopeUseHtml, envelopeUseOf } from './controls-page.ts';
import { esc, htmlText } from './html.ts';
import { accountTimeText, localTimeScript, timeHtml } from './local-time.ts';
import {
  partsHtml,
  shownJsonParts,
  shownText,
  spaceLegendHtml,
  summaryHtml,
  valueHtml,
} from './shown-values.ts';

function parse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const fmt = valueHtml;

/** A field's path, which may break after each dot rather than anywhere. */
const fieldHtml = (field: string) => esc(field).replaceAll('.', '.<wbr>');

/** Statuses of a change that has not reached the ad account yet, and still may. */
const PENDING = new Set(['prepared', 'approved', 'applying']);

/** The object a change is about: its account and its platform path. */
const targetKey = (c: Change) => `${c.accountId} ${c.targetPath}`;

/**
 * The other pending changes to the same object as `c` among `peers`: once one of them is
 * applied, the object's revision moves and the others can no longer be approved or applied.
 */
export function conflictsOf(c: Change, peers: readonly Change[]): Change[] {
  if (!PENDING.has(statusWord(c))) return [];
  return peers.filter(
    (o) => o.changeId !== c.changeId && PENDING.has(statusWord(o)) && targetKey(o) === targetKey(c),
  );
}

const WAITING = 'waiting for the agent to apply it (ads_apply_change)';

/** The marks of a change in a list: conflicting with other pending changes, waiting to be applied. */
function marksHtml(c: Change, peers: readonly Change[]): string {
  const marks: string[] = [];
  const others = conflictsOf(c, peers).length;
  if (others > 0)
    marks.push(
      `<span class="mark conflict" data-mark="conflict">conflicts with ${others} other pending change${others === 1 ? '' : 's'} to the same object</span>`,
    );
  if (statusWord(c) === 'approved')
    marks.push(`<span class="mark waiting" data-mark="waiting">${WAITING}</span>`);
  if (c.outcomeUnknown)
    marks.push(
      `<span class="mark conflict" data-mark="outcome-unknown">outcome unknown: it may or may not have been applied</span>`,
    );
  // While an outage lasts an apply waits, and its error says for what.
  if (statusWord(c) === 'applying' && c.error !== undefined)
    marks.push(`<span class="mark waiting" data-mark="applying-waits">${esc(c.error)}</span>`);
  return marks.join('');
}

/**
 * A table of changes; `people` names who prepared each (see loadPeople). Conflicts are found
 * among `changes` and `peers` (more pending changes, beyond the ones listed).
 */
/** Accounts by id (lower case), for the lists. */
export function accountNames(
  accounts: readonly { accountId: string; name: string; timeZone: string }[],
): AccountNames {
  return new Map(accounts.map((a) => [a.accountId.toLowerCase(), { name: a.name, timeZone: a.timeZone }]));
}

/** An ad account as the lists show it: by name, with its time zone. */
export type AccountNames = ReadonlyMap<string, { name: string; timeZone: string }>;

export function changeListHtml(
  changes: Change[],
  people: People,
  peers: readonly Change[] = [],
  accounts: AccountNames = new Map(),
): string {
  if (changes.length === 0) return '<p class="muted">No changes yet.</p>';
  const known = new Set(changes.map((c) => c.changeId));
  const all = [...changes, ...peers.filter((p) => !known.has(p.changeId))];
  const row = (c: Change) => {
    const account = accounts.get(c.accountId.toLowerCase());
    const zone = account
      ? `<br><span class="muted" title="the account's time zone">${esc(accountTimeText(c.preparedAt, account.timeZone))}</span>`
      : '';
    return `<tr data-change="${esc(c.changeId)}"><td class="state">${esc(statusWord(c))}${marksHtml(c, all)}</td><td class="summary"><div class="clamp" title="The whole summary is on the change's page">${summaryHtml(c.summary)}</div></td>
      <td class="account">${esc(account?.name ?? 'an account not listed')}</td><td>${timeHtml(c.preparedAt)}${zone}</td><td>${actorHtml(c.preparedBy, people)}</td><td><a href="/dashboard/changes/${esc(c.changeId)}">Review</a></td></tr>`;
  };
  return `<table id="changes"><thead><tr><th>Status</th><th>Change</th><th>Ad account</th><th>Prepared</th><th>Prepared by</th><th></th></tr></thead><tbody>${changes
    .map(row)
    .join('')}</tbody></table>`;
}

/** What the review page knows beyond the change: its live check and its conflicting changes. */
export interface ReviewContext {
  /** The object re-read on the platform (prepared changes only). */
  live?: LiveCheck;
  /** Other pending changes to the same object. */
  conflicts: readonly Change[];
  /** The campaign assets the change's body uses (`asset_id`), each with a fresh delivery link's path. */
  assets?: readonly { assetId: string; path: string }[];
  /** The change's ad account, as the upstream proxy lists it, when it could be read. */
  account?: { name: string; timeZone: string };
  /** What the change uses of its account's spend envelope, and what is left (controls-page.ts). */
  envelope?: Awaited<ReturnType<typeof envelopeUseOf>>;
  /** The standards the change was checked against as they are now, and those added since. */
  standardsNow?: GetCheckedStandardsNowResponse;
}

/** The asset ids a change's body names in `asset_id` properties, at any depth, each once. */
export function assetIdsOf(body: unknown): string[] {
  const found = new Set<string>();
  const pending: unknown[] = [body];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (typeof next !== 'object' || next === null) continue;
    for (const [k, v] of Object.entries(next)) {
      if (k === 'asset_id' && typeof v === 'string' && isUuid(v)) found.add(v.toLowerCase());
      else pending.push(v);
    }
  }
  return [...found];
}

/**
 * What each asset shows on: the title of every creative of the body that names it (an ad's
 * creative, or each ad a bulk job creates), so that a reviewer of several images sees which ad
 * gets which. An update of an ad's image alone shows it on the ad's current title (`before`, the
 * ad as it was when the change was prepared).
 */
export function titlesByAsset(body: unknown, before?: unknown): Map<string, string[]> {
  const titles = new Map<string, string[]>();
  const isObject = (v: unknown): v is Record<string, unknown> =>
    typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObject(body)) return titles;
  const ops = Array.isArray(body.operations) ? body.operations : [];
  const liveTitle = isObject(before) && isObject(before.creative) ? before.creative.title : undefined;
  const creatives = [
    isObject(body.creative) ? { title: liveTitle, ...body.creative } : undefined,
    ...ops.map((op) => (isObject(op) && isObject(op.body) ? op.body.creative : undefined)),
  ];
  for (const c of creatives) {
    if (!isObject(c) || typeof c.asset_id !== 'string') continue;
    const id = c.asset_id.toLowerCase();
    titles.set(id, [...(titles.get(id) ?? []), typeof c.title === 'string' ? c.title : '']);
  }
  return titles;
}

/**
 * The creative preview: the image of each asset the change uses, through its delivery link, with
 * the ads it shows on, what the change pinned of it (the image that will be uploaded) and, once
 * applied, its file.
 */
function previewHtml(
  assets: ReviewContext['assets'],
  uploads: Change['uploads'],
  body: unknown,
  before: unknown,
): string {
  if (assets === undefined || assets.length === 0) return '';
  const titles = titlesByAsset(body, before);
  const shownOn = (assetId: string) => {
    const on = (titles.get(assetId) ?? []).filter((t) => t !== '');
    return on.length === 0
      ? ''
      : `<br><span data-shown-on class="v">Shown on ${on.length === 1 ? 'the ad' : `${on.length} ads`} titled ${on.map((t) => `“${htmlText(shownText(t))}”`).join(', ')}</span>`;
  };
  const pinned = (assetId: string) => {
    const u = uploads.find((x) => x.assetId === assetId);
    if (u === undefined) return '';
    const file =
      u.fileId === undefined
        ? 'uploaded to the ad platform when the change is applied'
        : `uploaded as file <code data-file-id>${esc(u.fileId)}</code>`;
    return `: “${esc(u.name)}”, ${esc(u.width)}×${esc(u.height)} ${esc(u.mimeType)}, ${esc(u.byteSize)} bytes, sha256 <code data-sha256>${esc(u.sha256)}</code>; ${file}`;
  };
  return `<section id="creative-preview"><h2>Creative preview</h2>${assets
    .map(
      (a) =>
        `<figure data-asset="${esc(a.assetId)}"><img src="${esc(a.path)}" alt="Campaign asset ${esc(a.assetId)}" style="max-width:100%;max-height:480px"><figcaption class="muted">Asset <code>${esc(a.assetId)}</code>${pinned(a.assetId)}${shownOn(a.assetId)}</figcaption></figure>`,
    )
    .join('')}</section>`;
}

/**
 * What a person settling an unknown outcome looks at: that the platform may or may not have
 * applied the change, and the object as the platform shows it now next to what was reviewed.
 */
function outcomeUnknownHtml(c: Change, live: LiveCheck | undefined): string {
  const intro = `<p class="error" role="status"><strong>Outcome unknown:</strong> this change was sent to the ad platform and no answer was recorded, so the platform may or may not have applied it. Check the object below (or on the platform), then send it again with the same idempotency key (the platform applies it at most once), or record what you found.</p>`;
  let object: string;
  if (live === undefined || live.objectJson === '') {
    object = `<p class="muted" id="live-object-unknown">${esc(live?.reason || 'The object could not be read on the ad platform just now.')}</p>`;
  } else {
    const rows = changeRows(
      c.operation?.path ?? '',
      parse(live.objectJson),
      parse(c.operation?.bodyJson ?? ''),
    );
    const before = parse(c.targetBeforeJson);
    const was = new Map(
      changeRows(c.operation?.path ?? '', before, parse(c.operation?.bodyJson ?? '')).map((r) => [
        r.field,
        r.before,
      ]),
    );
    const verdict = live.showsReviewed
      ? '<p class="notice" id="live-verdict" data-shows-reviewed="true">The object on the platform already shows every reviewed field: the change looks applied.</p>'
      : `<p class="error" id="live-verdict" data-shows-reviewed="false">The object on the platform does not show every reviewed field:</p><ul>${live.differences
          .map((d) => `<li>${esc(d)}</li>`)
          .join('')}</ul>`;
    object = `${verdict}<table id="live-object"><thead><tr><th>Field</th><th>When prepared</th><th>Reviewed</th><th>On the platform now</th></tr></thead><tbody>${rows
      .map(
        (r) =>
          `<tr><td class="field">${fieldHtml(r.field)}</td><td>${fmt(was.get(r.field))}</td><td>${fmt(r.after)}</td><td>${fmt(r.before)}</td></tr>`,
      )
      .join('')}</tbody></table>`;
    object += spaceLegendHtml(object);
  }
  return `<section id="outcome-unknown"><h2>Did the platform apply it?</h2>${intro}${object}</section>`;
}

/** The notices above a change's decision: stale, conflicting, waiting to be applied. */
function noticesHtml(c: Change, ctx: ReviewContext): string {
  const out: string[] = [];
  if (statusWord(c) === 'prepared' && ctx.live?.stale) {
    out.push(
      `<p class="error" id="stale" role="status">This change can no longer be approved: ${esc(ctx.live.reason)}</p>`,
    );
  } else if (statusWord(c) === 'prepared' && ctx.live?.unavailable) {
    out.push(
      `<p class="muted" id="live-unknown">The object could not be checked against the ad platform just now; approving checks it again. (${esc(ctx.live.reason)})</p>`,
    );
  }
  if (ctx.conflicts.length > 0) {
    out.push(
      `<div id="conflicts" class="notice"><p><strong>Conflicting:</strong> ${
        ctx.conflicts.length === 1
          ? 'another pending change targets'
          : `${ctx.conflicts.length} other pending changes target`
      } the same object (<code>${esc(c.targetPath)}</code>). Once one of them is applied, the others can no longer be approved or applied.</p><ul>${ctx.conflicts
        .map(
          (o) =>
            `<li><a href="/dashboard/changes/${esc(o.changeId)}" data-change="${esc(o.changeId)}" class="summary">${summaryHtml(o.summary)}</a> <span class="muted">(${esc(statusWord(o))})</span></li>`,
        )
        .join('')}</ul></div>`,
    );
  }
  if (statusWord(c) === 'approved') {
    out.push(
      `<p class="notice" id="waiting">Approved: ${WAITING}. Nothing has been sent to the ad account yet.</p>`,
    );
  }
  if (statusWord(c) === 'expired') {
    const what = c.approvedAt
      ? 'Its approval was not followed by a request to apply it in time'
      : 'Nobody approved it in time';
    out.push(
      `<p class="error" id="expired" role="status">Expired at ${timeHtml(c.expiresAt)}. ${what}, so it can no longer be approved or applied, and nothing was sent to the ad account. Prepare it again if it is still wanted.</p>`,
    );
  }
  if (c.outcomeUnknown) out.push(outcomeUnknownHtml(c, ctx.live));
  return out.join('');
}

/** What became of a checked standard since the change was prepared, in words, or '' when nothing. */
function sinceHtml(now: GetCheckedStandardsNowResponse['checked'][number] | undefined): string {
  if (now === undefined) return '';
  if (now.archivedAt !== undefined)
    return ` <span class="error standard-since">archived since, at ${timeHtml(now.archivedAt)}: no longer enforced</span>`;
  if (now.revision !== now.checkedRevision)
    return ` <span class="notice standard-since">saved since: now revision ${esc(now.revision)}, saved ${timeHtml(now.savedAt)}; approval and apply check the change against it</span>`;
  return ` <span class="muted standard-since">unchanged since, saved ${timeHtml(now.savedAt)}</span>`;
}

/**
 * The account standards the change was checked against when prepared (their revision, with what
 * became of each since), the standards added since, and loosenings of them waiting for a person.
 */
function standardsCheckedHtml(c: Change, now?: GetCheckedStandardsNowResponse): string {
  const list = c.standardsChecked;
  const rows = list
    .map(
      (s) =>
        `<li data-standard="${esc(s.standardId)}"><strong>${esc(s.name)}</strong> <span class="muted">(revision ${esc(s.revision)})</span>${sinceHtml(now?.checked.find((n) => n.standardId === s.standardId))}${s.guidance ? `<pre class="guidance">${esc(s.guidance)}</pre>` : ''}</li>`,
    )
    .join('');
  const added = (now?.added ?? [])
    .map(
      (s) =>
        `<li data-standard="${esc(s.standardId)}"><strong>${esc(s.name)}</strong> <span class="muted">(revision ${esc(s.revision)}, saved ${timeHtml(s.updatedAt)})</span></li>`,
    )
    .join('');
  const pending = (now?.pending ?? [])
    .map(
      (p) =>
        `<li data-pending="${esc(p.pendingId)}">${esc(p.action)} <strong>${esc(p.standardName)}</strong>: ${esc(p.loosenings.join('; '))}</li>`,
    )
    .join('');
  return `<section id="standards-checked"><h2>Account standards checked</h2>${
    list.length === 0
      ? '<p class="muted">The account had no standards when this change was prepared.</p>'
      : `<p class="muted">The change kept these standards when it was prepared; they are checked again before it is approved and applied.</p><ul>${rows}</ul>`
  }${added ? `<p id="standards-added">Standards added since the change was prepared (it is held to them at approval and apply):</p><ul>${added}</ul>` : ''}${
    pending
      ? `<p id="standards-pending">Loosenings of this account's standards waiting for a person (<a href="/dashboard/accounts/${esc(c.accountId)}#pending-standard-changes">confirm or reject</a>); until then the standards above apply:</p><ul>${pending}</ul>`
      : ''
  }</section>`;
}

/**
 * What a person typed into a form of the review page that was refused: the page shown with the
 * refusal keeps it in its field, so that nothing typed is lost.
 */
export interface TypedOnReview {
  /** The reason of a refused reject. */
  rejectReason?: string;
  /** The note of a refused settle, and the resolution whose form it was typed in. */
  settle?: { resolution: string; note: string };
}

/** The review page of one change; `people` names who acted on it (see loadPeople). */
export function changeDetailHtml(
  c: Change,
  people: People,
  csrf: string,
  canDecide: boolean,
  review: ReviewContext,
  message?: string,
  typed: TypedOnReview = {},
): string {
  const body = parse(c.operation?.bodyJson ?? '');
  const before = parse(c.targetBeforeJson);
  const rows = changeRows(c.operation?.path ?? '', before, body);
  return `<p><a href="/dashboard/changes">← All changes</a></p>
    ${message ? `<p class="error" role="alert">${esc(message)}</p>` : ''}
    ${noticesHtml(c, review)}
    <section><h2 class="summary">${summaryHtml(c.summary)}</h2>
    <table>${factsHtml(c, people, review)}</table></section>
    ${standardsCheckedHtml(c, review.standardsNow)}
    ${envelopeUseHtml(review.envelope)}
    <section><h2>What changes</h2>
    ${whatChangesHtml(rows)}</section>
    ${previewHtml(review.assets, c.uploads, body, before)}
    <section><h2>Exact request</h2>
    ${exactRequestHtml(c)}
    ${decideHtml(c, csrf, canDecide, review, typed.rejectReason)}</section>${settleHtml(c, csrf, canDecide, typed.settle)}${revertHtml(c, csrf, canDecide)}${localTimeScript}`;
}

/** Approve (unless stale) and Reject, for a change still waiting for a decision and a person who may decide. */
function decideHtml(
  c: Change,
  csrf: string,
  canDecide: boolean,
  review: ReviewContext,
  typedReason = '',
): string {
  // A stale change is never offered for approval; rejecting it still clears it from the queue.
  const approvable = !(review.live?.stale ?? false);
  // An approved change nobody asked to apply yet can still be rejected: its approval is withdrawn.
  const rejectable = statusWord(c) === 'prepared' || statusWord(c) === 'approved';
  return rejectable && canDecide
    ? `${
        statusWord(c) === 'prepared' && approvable
          ? `<form method="post" action="/dashboard/changes/${esc(c.changeId)}/approve" style="display:inline">
           <input type="hidden" name="csrf" value="${esc(csrf)}"><input type="hidden" name="digest" value="${esc(c.digest)}">
           <button type="submit" id="approve">Approve</button></form>`
          : ''
      }
         <form method="post" action="/dashboard/changes/${esc(c.changeId)}/reject">
           <input type="hidden" name="csrf" value="${esc(csrf)}">
           <label for="reason">Reason for rejecting${statusWord(c) === 'approved' ? ' (withdraws the approval; nothing has been sent)' : ''}</label><input id="reason" name="reason" required value="${esc(typedReason)}">
           <p><button class="danger" type="submit" id="reject">Reject</button></p></form>`
    : rejectable
      ? '<p class="muted">Your role can review changes but not approve or reject them.</p>'
      : '';
}

function revertHtml(c: Change, csrf: string, canDecide: boolean): string {
  // An applied change can be reverted by a change of its own, prepared here and reviewed like any other.
  return statusWord(c) === 'applied' && canDecide
    ? `<section><h2>Undo</h2><form method="post" action="/dashboard/changes/${esc(c.changeId)}/revert">
           <input type="hidden" name="csrf" value="${esc(csrf)}">
           <label for="revert-reason">Why (optional, shown to the reviewer)</label><input id="revert-reason" name="reason" maxlength="500">
           <p><button type="submit" id="prepare-revert">Prepare revert</button></p></form>
           <p class="muted">Prepares the change that puts this one back; it is reviewed, approved and applied like any change, and refused if the object moved since.</p></section>`
    : '';
}

function settleHtml(c: Change, csrf: string, canDecide: boolean, typed: TypedOnReview['settle']): string {
  return !c.outcomeUnknown
    ? ''
    : canDecide
      ? settleFormsHtml(c, csrf, typed)
      : '<p class="muted">Your role can see this change but not settle its outcome.</p>';
}

/** The fields the change sets, before and after; those sent unchanged are named below the table. */
function whatChangesHtml(rows: ReturnType<typeof changeRows>): string {
  // Fields the request sends with the value they already had are left out of "What changes".
  const same = (r: { before: unknown; after: unknown }) =>
    JSON.stringify(r.before) === JSON.stringify(r.after);
  const unchanged = rows.filter(same).map((r) => r.field);
  const unchangedNote =
    unchanged.length === 0
      ? ''
      : `<p class="muted" id="unchanged">Sent with the value they already had, so not listed: ${esc(unchanged.join(', '))}.</p>`;
  const changesTable = `<table id="what-changes"><thead><tr><th>Field</th><th>Before (when prepared)</th><th>After</th></tr></thead><tbody>${rows
    .filter((r) => !same(r))
    .map(
      (r) =>
        `<tr><td class="field">${fieldHtml(r.field)}</td><td>${fmt(r.before)}</td><td>${fmt(r.after)}</td></tr>`,
    )
    .join('')}</tbody></table>`;
  return `${changesTable}${spaceLegendHtml(changesTable)}${unchangedNote}`;
}

/** The exact request: its line, its body as it must be read, and the digest approval is for. */
function exactRequestHtml(c: Change): string {
  // The request's text with what a person could misread spelled out; the bytes sent are as digested.
  const bodyJson = c.operation?.bodyJson ?? '';
  const payloadParts = shownJsonParts(bodyJson);
  const payload = partsHtml(payloadParts);
  const payloadShownAsIs =
    payloadParts.every((p) => p.host === undefined) && payloadParts.map((p) => p.text).join('') === bodyJson;
  const payloadNote = payloadShownAsIs
    ? ''
    : '<p class="muted" id="payload-note">Shown with spaces as ␣, hidden characters as ⟨U+…⟩ and each host in its ASCII form, as it must be read; the request sends the text as written, byte for byte as digested.</p>';
  return `<p><code id="request-line">${esc(c.operation?.method)} ${esc(c.operation?.path)}</code></p>
    <pre id="payload" class="v">${payload}</pre>${spaceLegendHtml(payload)}${payloadNote}
    <p class="muted">Digest <code id="digest">${esc(c.digest)}</code>: approval is recorded for exactly this payload.</p>`;
}

/** The change's facts (status, account, who did what and when) as table rows, each left out when empty. */
function factsHtml(c: Change, people: People, review: ReviewContext): string {
  const zone = review.account?.timeZone;
  const when = (at: string | undefined) => whenHtml(at, zone);
  const by = (at: string | undefined, actor: string | undefined) =>
    at ? `${when(at)} by ${actorHtml(actor ?? '', people)}` : '';
  const facts: [string, string, string?][] = [
    ['Status', esc(statusWord(c)), 'status'],
    [statusWord(c) === 'expired' ? 'Expired' : 'Expires', when(c.expiresAt), 'expires-at'],
    [
      'Account',
      review.account
        ? `${esc(review.account.name)} <span class="muted">(time zone ${esc(review.account.timeZone)})</span>`
        : `<code>${esc(c.accountId)}</code>`,
      'account',
    ],
    ['Prepared', by(c.preparedAt, c.preparedBy), 'prepared-by'],
    ['Approved', by(c.approvedAt, c.approvedBy), 'approved-by'],
    [
      'Rejected',
      c.rejectedAt ? `${by(c.rejectedAt, c.rejectedBy)}: ${esc(c.rejectReason)}` : '',
      'rejected-by',
    ],
    ['Apply requested', by(c.applyRequestedAt, c.applyRequestedBy), 'apply-requested-by'],
    ['Applied again', by(c.applyRetriedAt, c.applyRetriedBy), 'apply-retried-by'],
    [
      'Outcome settled',
      c.resolvedAt
        ? `<span data-resolution="${esc(resolutionWord(c))}">${esc(RESOLUTION_WORDS[resolutionWord(c) ?? ''] ?? resolutionWord(c))}</span>, ${by(c.resolvedAt, c.resolvedBy)}${
            c.resolutionNote ? `: <q id="resolution-note">${esc(c.resolutionNote)}</q>` : ''
          }`
        : '',
      'resolved-by',
    ],
    ['Applied', when(c.appliedAt)],
    [
      'Reverts',
      c.revertsChangeId
        ? `<a href="/dashboard/changes/${esc(c.revertsChangeId)}">change ${esc(c.revertsChangeId)}</a>`
        : '',
      'reverts',
    ],
    [
      'Reverted by',
      c.revertedBy.map((id) => `<a href="/dashboard/changes/${esc(id)}">change ${esc(id)}</a>`).join(', '),
      'reverted-by',
    ],
    ['Error', esc(c.error)],
    [
      'Differs from review',
      c.appliedDifferences.length === 0
        ? ''
        : `<p class="error" role="alert">The platform's answer differs from what was approved:</p><ul>${c.appliedDifferences
            .map((d) => `<li>${esc(d)}</li>`)
            .join('')}</ul>`,
      'applied-differences',
    ],
  ];
  return facts
    .filter(([, v]) => v !== '')
    .map(([k, v, id]) => `<tr><th>${esc(k)}</th><td${id ? ` id="${id}"` : ''}>${v}</td></tr>`)
    .join('');
}

/** A time in the person's own zone (set by the page's script), and in the account's. */
function whenHtml(at: string | undefined, zone: string | undefined): string {
  return at
    ? `${timeHtml(at)}${zone ? ` <span class="muted">(${esc(accountTimeText(at, zone))})</span>` : ''}`
    : '';
}

/** How each resolution of an unknown outcome reads on the page. */
const RESOLUTION_WORDS: Record<string, string> = {
  send_again: 'sent again with the same idempotency key',
  applied: 'marked as applied',
  not_applied: 'marked as not applied',
};

/** The three ways to settle an unknown outcome, each a CSRF-protected form with an optional note. */
function settleFormsHtml(c: Change, csrf: string, typed: TypedOnReview['settle']): string {
  const note = (resolution: string) => (typed?.resolution === resolution ? typed.note : '');
  const form = (resolution: string, label: string, hint: string) =>
    `<form method="post" action="/dashboard/changes/${esc(c.changeId)}/resolve" data-resolution="${resolution}">
      <input type="hidden" name="csrf" value="${esc(csrf)}"><input type="hidden" name="resolution" value="${resolution}">
      <label for="note-${resolution}">Note (optional)</label><input id="note-${resolution}" name="note" value="${esc(note(resolution))}">
      <p><button type="submit" id="resolve-${resolution}">${esc(label)}</button> <span class="muted">${esc(hint)}</span></p></form>`;
  return `<section id="settle"><h2>Settle the outcome</h2>
    ${form('send_again', 'Send again (same idempotency key)', 'within 24 hours of its first send; the platform applies it at most once')}
    ${form('applied', 'Mark as applied', 'you found the change on the ad platform')}
    ${form('not_applied', 'Mark as not applied', 'you found it not there; it is not sent again')}</section>`;
}

/** The principal for a dashboard session's calls. */
export function sessionPrincipal(s: {
  workspace_id: string;
  user_id: string;
  role: Principal['role'];
}): Principal {
  return {
    workspaceId: s.workspace_id,
    credentialId: `dashboard:${s.user_id}`,
    userId: s.user_id,
    role: s.role,
    scopes: s.role === 'viewer' ? ['read'] : ['read', 'write'],
    via: 'dashboard',
  };
}

export async function loadChange(deps: GatewayDeps, p: Principal, id: string): Promise<Change | undefined> {
  return (await loadReview(deps, p, id, false))?.change;
}

/**
 * A change with what its review page needs: the object re-read on the platform (when
 * `checkLive` and the change is prepared) and the other pending changes to the same object.
 */
export async function loadReview(
  deps: GatewayDeps,
  p: Principal,
  id: string,
  checkLive = true,
): Promise<({ change: Change } & ReviewContext) | undefined> {
  if (!isUuid(id)) return undefined;
  let res: { change?: Change; live?: LiveCheck };
  try {
    res = await deps.changes.getChange({ changeId: id, checkLive }, onBehalfOf(p));
  } catch (err) {
    if (ConnectError.from(err).code === Code.NotFound) return undefined;
    throw err;
  }
  const change = res.change;
  if (!change) return undefined;
  // Fresh links on every view; a link to an archived or unknown asset shows no image.
  const links = deps.assetLinks;
  const assets =
    links === undefined
      ? []
      : assetIdsOf(parse(change.operation?.bodyJson ?? '')).map((assetId) => ({
          assetId,
          path: links.link(p.workspaceId, assetId).path,
        }));
  const account = await deps.upstream.listAccounts({}, onBehalfOf(p)).then(
    (r) => r.accounts.find((a) => a.accountId === change.accountId),
    () => undefined,
  );
  const envelope = await envelopeUseOf(deps, p, change.changeId, account?.currency ?? '');
  const standardsNow = checkLive
    ? await deps
        .clientOf(StandardsService)
        .getCheckedStandardsNow({ changeId: change.changeId }, onBehalfOf(p))
        .catch(() => undefined)
    : undefined;
  if (!checkLive || !PENDING.has(statusWord(change)))
    return { change, live: res.live, conflicts: [], assets, account, envelope, standardsNow };
  const { changes } = await deps.changes.listChanges(
    { accountId: change.accountId, limit: 100, offset: 0 },
    onBehalfOf(p),
  );
  return {
    change,
    live: res.live,
    conflicts: conflictsOf(change, changes),
    assets,
    account,
    envelope,
    standardsNow,
  };
}

/** Pending changes of the workspace (prepared and approved), to find conflicts among. */
export async function pendingChanges(deps: GatewayDeps, p: Principal): Promise<Change[]> {
  const lists = await Promise.all(
    [ChangeStatus.PREPARED, ChangeStatus.APPROVED].map((state) =>
      deps.changes.listChanges({ state, accountId: '', limit: 100, offset: 0 }, onBehalfOf(p)),
    ),
  );
  return lists.flatMap((l) => l.changes);
}
