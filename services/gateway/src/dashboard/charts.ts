/**
 * An ad account's performance as charts: spend, impressions, clicks and conversions per
 * account-local day from the platform's insights (each ad group's, read through the upstream
 * proxy as the insight tools read them, and summed), and the changes applied per day. Charts are
 * rendered to SVG on the server by Vega-Lite and Vega (no DOM, no script in the page, nothing
 * fetched from another host), each with its numbers in a table for screen readers and for
 * anyone who would rather read them.
 */
import { ChangeStatus } from '@adsmcp/proto/changes/v1/changes_pb';
import { ControlsService, type SpendEnvelope } from '@adsmcp/proto/changes/v1/controls_pb';
import type { Account } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { exactCount } from '@adsmcp/runtime/platform-read/insights';
import { items, type PlatformPage } from '@adsmcp/runtime/platform-read/pages';
import type { Principal } from '@adsmcp/runtime/principal';
import { localDay } from '@adsmcp/runtime/zoned-format';
import pLimit from 'p-limit';
import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import { esc } from './html.ts';
import { localTimeScript } from './local-time.ts';
import { microsToDecimal, moneyHtml } from './shown-values.ts';

/** Days the charts cover, today (account-local, still preliminary) included. */
export const CHART_DAYS = 14;
/** Ad groups whose insights are summed; an account with more says the charts cover these. */
const MAX_AD_GROUPS = 25;
const READS_AT_ONCE = 4;

/** One account-local day of the account's delivery, summed over its ad groups. */
export interface DayPerformance {
  day: string;
  impressions: number;
  clicks: number;
  spendMicros: number;
  conversions: number;
  changesApplied: number;
}

export interface AccountPerformance {
  days: DayPerformance[];
  adGroups: number;
  /** Ad groups past MAX_AD_GROUPS, left out of the sums. */
  adGroupsLeftOut: number;
  /** Why the platform's numbers are missing, when they are. */
  problem?: string;
}

/** The last `count` account-local days, oldest first, ending with today there. */
export function lastDays(now: Date, timeZone: string, count = CHART_DAYS): string[] {
  const today = localDay(now, timeZone);
  const base = Date.parse(`${today}T00:00:00Z`);
  return Array.from({ length: count }, (_, i) =>
    new Date(base - (count - 1 - i) * 86_400_000).toISOString().slice(0, 10),
  );
}

// A whole count as the platform writes it (a JSON integer or digits), summed as a number for drawing:
// a chart's scale needs no more than 2^53.
const numberOf = (v: unknown) => Number(exactCount(v) ?? 0n);

async function platformGet(
  deps: GatewayDeps,
  p: Principal,
  accountId: string,
  path: string,
  query: [string, string][],
): Promise<Record<string, unknown>> {
  const res = await deps.upstream.call(
    {
      accountId,
      method: 'GET',
      path,
      query: query.map(([name, value]) => ({ name, value })),
      bodyJson: '',
      idempotencyKey: '',
    },
    onBehalfOf(p),
  );
  if (res.status < 200 || res.status > 299) throw new Error(`the ad platform answered HTTP ${res.status}`);
  return JSON.parse(res.bodyJson) as Record<string, unknown>;
}

/** Reads the account's daily delivery and its applied changes for the charts. */
export async function loadAccountPerformance(
  deps: GatewayDeps,
  p: Principal,
  account: Account,
  now = new Date(),
): Promise<AccountPerformance> {
  const days = lastDays(now, account.timeZone);
  const byDay = new Map<string, DayPerformance>(
    days.map((day) => [
      day,
      { day, impressions: 0, clicks: 0, spendMicros: 0, conversions: 0, changesApplied: 0 },
    ]),
  );
  const applied = deps.changes
    .listChanges(
      { state: ChangeStatus.APPLIED, accountId: account.accountId, limit: 200, offset: 0 },
      onBehalfOf(p),
    )
    .then(
      (r) => r.changes,
      () => [],
    );
  let adGroups = 0;
  let adGroupsLeftOut = 0;
  let problem: string | undefined;
  try {
    const list = await platformGet(deps, p, account.accountId, '/ad_groups', [
      ['limit', String(MAX_AD_GROUPS)],
    ]);
    const groups = Array.isArray(list.data) ? (list.data as Record<string, unknown>[]) : [];
    adGroups = groups.length;
    const paging = list.paging as { has_more?: boolean } | undefined;
    if (paging?.has_more) adGroupsLeftOut = 1;
    const limit = pLimit(READS_AT_ONCE);
    const range = `${days[0]}..${days[days.length - 1]}`;
    const rows = await Promise.all(
      groups.map((g) =>
        limit(async () => {
          const path = `/ad_groups/${encodeURIComponent(String(g.id))}/insights`;
          const read = async (after: string | undefined): Promise<PlatformPage> => {
            const page = await platformGet(deps, p, account.accountId, path, [
              ['time_ranges', range],
              ['time_granularity', 'daily'],
              ['fields', 'impressions'],
              ['fields', 'clicks'],
              ['fields', 'spend_micros'],
              ['fields', 'conversions'],
              ['limit', String(CHART_DAYS * 2)],
              ...(after === undefined ? [] : ([['after', after]] as [string, string][])),
            ]);
            return { data: Array.isArray(page.data) ? page.data : [], paging: page.paging };
          };
          const rows: Record<string, unknown>[] = [];
          for await (const row of items(read, {
            maxPages: 10,
            what: `the insights of ad group ${String(g.id)}`,
          }))
            rows.push(row);
          return rows;
        }),
      ),
    );
    for (const row of rows.flat()) {
      const day = byDay.get(String(row.date_start));
      if (day === undefined) continue;
      day.impressions += numberOf(row.impressions);
      day.clicks += numberOf(row.clicks);
      day.spendMicros += numberOf(row.spend_micros);
      day.conversions += numberOf(row.conversions);
    }
  } catch (err) {
    problem = `The platform's insights could not be read just now (${err instanceof Error ? err.message : 'no answer'}).`;
  }
  for (const c of await applied) {
    if (!c.appliedAt) continue;
    const day = byDay.get(localDay(new Date(c.appliedAt), account.timeZone));
    if (day !== undefined) day.changesApplied += 1;
  }
  return { days: [...byDay.values()], adGroups, adGroupsLeftOut, ...(problem !== undefined && { problem }) };
}

/** One series as an SVG chart, with a text description for assistive technology. */
async function chartSvg(
  title: string,
  values: { day: string; value: number }[],
  mark: 'line' | 'bar',
  valueTitle: string,
): Promise<string> {
  const spec: TopLevelSpec = {
    width: 420,
    height: 120,
    background: 'white',
    config: {
      aria: false,
      font: 'system-ui, sans-serif',
      axis: { labelColor: '#4f586b', titleColor: '#4f586b' },
    },
    data: { values },
    mark:
      mark === 'line' ? { type: 'line', point: true, color: '#1f5fbf' } : { type: 'bar', color: '#1f5fbf' },
    encoding: {
      x: {
        field: 'day',
        type: 'ordinal',
        title: null,
        axis: { labelAngle: -45, labelExpr: 'slice(datum.value, 5)' },
      },
      // A series of zeros (no change applied in the period) still gets an axis from 0 to 1.
      y: {
        field: 'value',
        type: 'quantitative',
        title: valueTitle,
        scale: { domainMin: 0, ...(values.every((v) => v.value === 0) && { domainMax: 1 }) },
        axis: { tickCount: 4, format: '~s', ...(mark === 'bar' && { tickMinStep: 1 }) },
      },
    },
  };
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: 'none' });
  const svg = await view.toSVG();
  view.finalize();
  const total = values.reduce((sum, v) => sum + v.value, 0);
  const peak = values.reduce(
    (best, v) => (v.value > best.value ? v : best),
    values[0] ?? { day: '', value: 0 },
  );
  const description = `${title}: ${values.length} days, total ${Math.round(total * 100) / 100}${peak.day ? `, highest on ${peak.day} (${Math.round(peak.value * 100) / 100})` : ''}. The numbers are in the table below.`;
  // The marks' own roles and labels would each want a text of their own; the chart is one image,
  // described as a whole, with its numbers in the table.
  const bare = svg.replace(/ (?:role|aria-[a-z]+)="[^"]*"/g, '');
  return bare.replace(/^<svg\b/, () => `<svg role="img" aria-label="${esc(description)}" focusable="false"`);
}

/**
 * How much of the account's spend envelope the last 24 hours used: a bar of what was used beside
 * what is left, and the same in words (the exact amounts, with their micros).
 */
export async function envelopeHtml(deps: GatewayDeps, p: Principal, account: Account): Promise<string> {
  let envelope: SpendEnvelope | undefined;
  try {
    ({ envelope } =
      (
        await deps
          .clientOf(ControlsService)
          .getAccountControls({ accountId: account.accountId }, onBehalfOf(p))
      ).controls ?? {});
  } catch {
    return '<p class="muted" data-envelope>The spend envelope could not be read just now.</p>';
  }
  if (envelope?.envelopeMicros === undefined)
    return `<p class="muted" data-envelope>No spend envelope is set for this account${envelope?.failClosed ? ': changes that raise a daily budget are refused (no envelope, no write)' : ''}.</p>`;
  const total = Number(envelope.envelopeMicros);
  const used = Number(envelope.usedMicros);
  const left = Math.max(0, total - used);
  const share = total > 0 ? Math.round((used / total) * 1000) / 10 : 0;
  const words = `Used ${moneyHtml(envelope.usedMicros, account.currency, { exact: true })} of ${moneyHtml(envelope.envelopeMicros, account.currency, { exact: true })} in the last 24 hours (${share}%).`;
  const spec: TopLevelSpec = {
    width: 420,
    height: 28,
    background: 'white',
    config: {
      aria: false,
      font: 'system-ui, sans-serif',
      axis: { labelColor: '#4f586b', titleColor: '#4f586b' },
    },
    data: {
      values: [
        { part: 'used', value: used / 1e6, order: 0 },
        { part: 'left', value: left / 1e6, order: 1 },
      ],
    },
    mark: 'bar',
    encoding: {
      x: {
        field: 'value',
        type: 'quantitative',
        stack: 'zero',
        title: account.currency,
        axis: { tickCount: 4 },
      },
      order: { field: 'order' },
      color: {
        field: 'part',
        type: 'nominal',
        scale: { domain: ['used', 'left'], range: ['#1f5fbf', '#d5dae2'] },
        legend: { orient: 'right', title: null },
      },
    },
  };
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: 'none' });
  const svg = (await view.toSVG()).replace(/ (?:role|aria-[a-z]+)="[^"]*"/g, '');
  view.finalize();
  const label = `Spend envelope: ${share}% used in the last 24 hours.`;
  return `<figure class="chart" data-chart="envelope"><figcaption>Spend envelope, last 24 hours</figcaption>${svg.replace(/^<svg\b/, () => `<svg role="img" aria-label="${esc(label)}" focusable="false"`)}<p data-envelope>${words}</p></figure>`;
}

/** The account's performance section: four charts, changes applied per day, and the numbers. */
export async function performanceHtml(
  deps: GatewayDeps,
  p: Principal,
  account: Account,
  now = new Date(),
): Promise<string> {
  let perf: AccountPerformance;
  try {
    perf = await loadAccountPerformance(deps, p, account, now);
  } catch {
    return '<section aria-labelledby="performance"><h2 id="performance">Performance</h2><p class="error">The performance could not be read just now.</p></section>';
  }
  const series = (pick: (d: DayPerformance) => number) =>
    perf.days.map((d) => ({ day: d.day, value: pick(d) }));
  const currency = account.currency;
  const charts = perf.problem
    ? [`<p class="error" role="alert">${esc(perf.problem)}</p>`]
    : await Promise.all(
        (
          [
            [`Spend (${currency})`, series((d) => d.spendMicros / 1e6), 'line', currency],
            ['Impressions', series((d) => d.impressions), 'line', 'impressions'],
            ['Clicks', series((d) => d.clicks), 'line', 'clicks'],
            ['Conversions', series((d) => d.conversions), 'line', 'conversions'],
          ] as const
        ).map(
          async ([title, values, mark, unit]) =>
            `<figure class="chart" data-chart="${esc(unit)}"><figcaption>${esc(title)}</figcaption>${await chartSvg(title, [...values], mark, unit)}</figure>`,
        ),
      );
  const appliedChart = `<figure class="chart" data-chart="changes-applied"><figcaption>Changes applied per day</figcaption>${await chartSvg(
    'Changes applied per day',
    series((d) => d.changesApplied),
    'bar',
    'changes',
  )}</figure>`;
  const money = (micros: number) => `${esc(currency)} ${esc(microsToDecimal(Math.round(micros)))}`;
  const table = `<details class="data"><summary>The numbers, as a table</summary><table id="performance-numbers"><caption class="sr-only">${esc(account.name)}: delivery and changes applied per day (account-local days, ${esc(account.timeZone)})</caption>
    <thead><tr><th>Day</th><th class="num">Spend</th><th class="num">Impressions</th><th class="num">Clicks</th><th class="num">Conversions</th><th class="num">Changes applied</th></tr></thead><tbody>${perf.days
      .map(
        (d) =>
          `<tr data-day="${esc(d.day)}"><td class="nowrap">${esc(d.day)}</td><td class="num">${money(d.spendMicros)}</td><td class="num">${esc(d.impressions.toLocaleString('en-US'))}</td><td class="num">${esc(d.clicks.toLocaleString('en-US'))}</td><td class="num">${esc(d.conversions.toLocaleString('en-US'))}</td><td class="num">${esc(d.changesApplied)}</td></tr>`,
      )
      .join('')}</tbody></table></details>`;
  const scope = perf.problem
    ? ''
    : `<p class="muted">The last ${CHART_DAYS} days on the account's calendar (${esc(account.timeZone)}), summed over its ${perf.adGroups} ad group${perf.adGroups === 1 ? '' : 's'}${perf.adGroupsLeftOut ? ` (the first ${MAX_AD_GROUPS}; the rest are left out)` : ''}; today's numbers are not final.</p>`;
  const envelope = await envelopeHtml(deps, p, account);
  return `<section aria-labelledby="performance"><h2 id="performance">Performance</h2>${scope}<div class="charts">${charts.join('')}${appliedChart}${envelope}</div>${table}</section>${localTimeScript}`;
}
