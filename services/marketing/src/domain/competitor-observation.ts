/**
 * One check of a source, judged: what the safe fetcher returned (a page, or why it refused or
 * failed) becomes an observation with its evidence, and the first good page becomes the baseline.
 */
import type { SafeFetchReason } from '@adsmcp/runtime/safe-fetch';
import type { CompetitorSource, Outcome } from './competitor-source.ts';
import {
  type Baseline,
  baselineOf,
  compareWithBaseline,
  firstComparison,
  type LiteralState,
  type TextChange,
} from './page-comparison.ts';
import { type PageText, pageTextOf, plainPageText } from './page-text.ts';

/** The largest page a check reads. */
export const PAGE_MAX_BYTES = 1024 * 1024;
/** Observations kept per source, newest first; older ones are deleted as new ones come. */
export const OBSERVATIONS_KEPT = 500;

export type Trigger = 'manual' | 'scheduled';

/** What the fetch came to. */
export type Fetched =
  | {
      kind: 'response';
      url: string;
      finalUrl: string;
      status: number;
      contentType: string | undefined;
      body: Buffer;
    }
  | { kind: 'error'; url: string; reason: SafeFetchReason | 'internal'; message: string };

export interface Evidence {
  titleChanged: boolean;
  bodyChanged: boolean;
  baselineTitle?: string;
  bodyChanges: TextChange[];
  bodyChangeCount: number;
  literals: LiteralState[];
}

export interface Observation {
  observationId: string;
  sourceId: string;
  workspaceId: string;
  checkedAt: Date;
  trigger: Trigger;
  requestedBy: string | null;
  outcome: Outcome;
  summary: string;
  url: string;
  finalUrl: string | null;
  httpStatus: number | null;
  reason: string | null;
  reasonMessage: string | null;
  title: string | null;
  evidence: Evidence;
}

/** A judged check: the observation to record and, for the first good page, the new baseline. */
export interface Judged {
  observation: Observation;
  baseline?: Baseline;
}

/** The fetcher's refusals: it would not send the request at all. Anything else is a failure. */
const REFUSALS: ReadonlySet<string> = new Set([
  'invalid_url',
  'scheme_not_allowed',
  'host_refused',
  'address_refused',
]);

const NO_EVIDENCE: Evidence = {
  titleChanged: false,
  bodyChanged: false,
  bodyChanges: [],
  bodyChangeCount: 0,
  literals: [],
};

/** The body as text in its declared charset; UTF-8 when it declares none or one unknown here. */
function decode(body: Buffer, charset: string | undefined): string {
  try {
    return new TextDecoder(charset || 'utf-8').decode(body);
  } catch {
    return new TextDecoder('utf-8').decode(body);
  }
}

/** The page's text, or why there is none to compare. */
function readPage(
  res: Extract<Fetched, { kind: 'response' }>,
): PageText | { reason: string; message: string } {
  if (res.status < 200 || res.status > 299) {
    return { reason: 'http_status', message: `the page answered HTTP ${res.status}` };
  }
  const [mime = '', ...params] = (res.contentType ?? 'text/html')
    .split(';')
    .map((s) => s.trim().toLowerCase());
  const charset = params
    .find((p) => p.startsWith('charset='))
    ?.slice('charset='.length)
    .replace(/"/g, '');
  const html = mime === 'text/html' || mime === 'application/xhtml+xml';
  if (!html && mime !== 'text/plain') {
    return { reason: 'not_html', message: `the page is ${mime || 'of no type'}, not HTML or plain text` };
  }
  const text = decode(res.body, charset);
  return html ? pageTextOf(text) : plainPageText(text);
}

type Base = Omit<
  Observation,
  'outcome' | 'summary' | 'finalUrl' | 'httpStatus' | 'reason' | 'reasonMessage' | 'title' | 'evidence'
>;

function unusable(
  base: Base,
  outcome: 'refused' | 'failed',
  reason: string,
  message: string,
  res?: { finalUrl: string; status: number },
): Observation {
  return {
    ...base,
    outcome,
    summary: `${outcome}: ${message}`,
    finalUrl: res?.finalUrl ?? null,
    httpStatus: res?.status ?? null,
    reason,
    reasonMessage: message,
    title: null,
    evidence: NO_EVIDENCE,
  };
}

/**
 * judge turns a fetch of `source` into an observation: refused or failed with the reason, or a
 * page compared with the source's baseline (or taken as the baseline when there is none).
 */
export function judge(
  source: CompetitorSource,
  fetched: Fetched,
  meta: { observationId: string; checkedAt: Date; trigger: Trigger; requestedBy: string | null },
): Judged {
  const base: Base = {
    ...meta,
    sourceId: source.sourceId,
    workspaceId: source.workspaceId,
    url: fetched.url,
  };
  if (fetched.kind === 'error') {
    const outcome = REFUSALS.has(fetched.reason) ? 'refused' : 'failed';
    return { observation: unusable(base, outcome, fetched.reason, fetched.message) };
  }
  if (fetched.url !== source.url) {
    return {
      observation: unusable(
        base,
        'failed',
        'source_changed',
        'the source was saved with another url during the check',
        fetched,
      ),
    };
  }
  const page = readPage(fetched);
  if ('reason' in page) return { observation: unusable(base, 'failed', page.reason, page.message, fetched) };
  const comparison =
    source.baseline === null
      ? firstComparison(page, source.literals)
      : compareWithBaseline(page, source.baseline, source.literals);
  const { outcome, summary, ...evidence } = comparison;
  const observation: Observation = {
    ...base,
    outcome,
    summary,
    finalUrl: fetched.finalUrl,
    httpStatus: fetched.status,
    reason: null,
    reasonMessage: null,
    title: page.title,
    evidence,
  };
  return source.baseline === null
    ? { observation, baseline: baselineOf(page, source.literals) }
    : { observation };
}
