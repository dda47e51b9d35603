/**
 * Campaign building in bulk, end to end through the official MCP client and the real processes: a
 * workbook (JSON rows, and a real XLSX file) planned as a paused bulk job preview that saves
 * nothing; a saved batch prepared at its revision as one change, its variants' source images
 * saved as campaign assets and pinned, approved, applied once (each image uploaded once), and the
 * job followed with ads_get_bulk_job, with the sandbox's ledger as the witness.
 *
 * The source images are served by a local HTTPS site. The product's fetcher refuses loopback
 * addresses, so this file runs the marketing service (the one that fetches them) in the test's
 * own process, built by its own buildServer with a fetcher that reaches that site; every other
 * service runs as a process, as always.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { archiveAccountStandards } from '@adsmcp/testkit/account-standards';
import { newWorkspaceToken, type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { type HttpsSite, startHttpsSite } from '@adsmcp/testkit/https-site';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import { sandboxLedger, toolCalls } from '@adsmcp/testkit/tool-calls';
import pg from 'pg';
import sharp from 'sharp';
import writeXlsxFile from 'write-excel-file/node';
import { xlsxFile } from '../../services/changes/test/xlsx-parts.ts';
import { marketingFetchingFrom } from './in-process-marketing.ts';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let agent: McpTestClient;
let account: SeedResult['accounts'][number];
let acct: string;

interface Operation {
  type: string;
  ref?: string;
  body: Record<string, unknown>;
}
interface WorkbookPlan {
  source: string;
  method: string;
  path: string;
  job: { operations: Operation[]; validate_only: boolean; partial_failure: boolean };
  campaign_count: number;
  ad_group_count: number;
  ad_count: number;
  schedule: { campaign: string; launch_date: string; start_time: string; note: string }[];
  ad_groups: { name: string; countries: string[]; bid_micros: string }[];
}
interface ChangeView {
  change_id: string;
  status: string;
  digest: string;
  summary: string;
  operation: { method: string; path: string; body: { operations: Operation[] } };
  upstream_response: { id: string } | null;
  countries: string[];
  uploads: { asset_id: string; sha256: string; width: number; height: number; file_id: string | null }[];
}
interface BulkJob {
  id: string;
  status: string;
  operation_count: number;
  processed_count: number;
  succeeded_count: number;
  results: { index: number; type: string; status: string; id?: string }[];
}

const { ok, refused } = toolCalls(() => agent);
const ledger = (path: string) => sandboxLedger(stack, account.upstream_account_id, path);

async function changeCount(): Promise<number> {
  return (await ok<{ total: number }>('ads_list_changes', {})).total;
}

/** The image host of the batches: each /…/<n>.png a PNG of its own colour; /missing.png a 404; /page.png HTML. */
const IMAGE_HOST = 'img.example.com';
let site: HttpsSite;
/** Requests the site answered, by path. */
const served = new Map<string, number>();
const fetched = (path: string) => served.get(path) ?? 0;
const imageUrl = (path: string) => `${site.origin(IMAGE_HOST)}${path}`;

async function startImageSite(): Promise<HttpsSite> {
  return startHttpsSite(
    (req, res) => {
      const path = req.url ?? '/';
      served.set(path, fetched(path) + 1);
      const n = /\/(\d+)\.png$/.exec(path)?.[1];
      if (path === '/page.png') {
        res.writeHead(200, { 'content-type': 'text/html' }).end('<html>not an image</html>');
        return;
      }
      if (n === undefined) {
        res.writeHead(404).end();
        return;
      }
      const shade = (Number(n) * 37) % 256;
      void sharp({ create: { width: 120, height: 100, channels: 3, background: { r: shade, g: 90, b: 60 } } })
        .png()
        .toBuffer()
        .then((png) => res.writeHead(200, { 'content-type': 'image/png' }).end(png));
    },
    [IMAGE_HOST],
  );
}

before(async () => {
  site = await startImageSite();
  e2e = await startSeededStack({
    env: { MCP_RATE_BURST: '500' },
    inProcessMarketing: marketingFetchingFrom(site),
  });
  ({ stack, seed } = e2e);
  account = seed.accounts.find((a) => a.currency === 'USD') as SeedResult['accounts'][number];
  acct = account.account_id;
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
});

after(async () => {
  await agent?.close();
  await e2e?.stop();
  await site?.close();
});

const sheets = {
  campaigns: [
    {
      name: 'Winter Sale',
      objective: 'clicks',
      budget: '19.99',
      budget_type: 'daily',
      launch_date: '2026-12-01',
    },
  ],
  adgroups: [{ campaign: 'Winter Sale', name: 'Warm plants', bid: '0.30', countries: ['US', 'CA'] }],
  ads: [
    {
      ad_group: 'Warm plants',
      name: 'Cosy one',
      title: 'Plants for winter',
      body: 'Cosy greens',
      target_url: 'https://shop.example.com/winter',
    },
  ],
};

describe('ads_plan_workbook', () => {
  test('JSON sheets compile to a paused job preview, with the flags carried and nothing saved', async () => {
    const changes = await changeCount();
    const plan = await ok<WorkbookPlan>('ads_plan_workbook', {
      account_id: acct,
      sheets,
      validate_only: true,
      partial_failure: true,
    });
    assert.equal(plan.source, 'sheets');
    assert.equal(`${plan.method} ${plan.path}`, 'POST /bulk_mutation_jobs');
    assert.equal(plan.job.validate_only, true);
    assert.equal(plan.job.partial_failure, true);
    assert.deepEqual(
      plan.job.operations.map((o) => [o.type, o.body.status]),
      [
        ['create_campaign', 'paused'],
        ['create_ad_group', 'paused'],
        ['create_ad', 'paused'],
      ],
    );
    assert.equal(plan.job.operations[0]?.body.budget_micros, 19_990_000);
    assert.equal(plan.job.operations[0]?.body.start_time, '2026-12-01T05:00:00Z');
    assert.match(plan.schedule[0]?.note ?? '', /previewed only/);
    assert.deepEqual(plan.ad_groups[0]?.countries, ['US', 'CA']);
    assert.equal(plan.ad_groups[0]?.bid_micros, '300000');
    assert.equal(await changeCount(), changes, 'planning records no change');
    assert.deepEqual(await ledger('/bulk_mutation_jobs'), [], 'planning sends nothing');
  });

  test('a real XLSX workbook compiles like its JSON rows', async () => {
    const cell = (value: string | number) => ({ value });
    const write = writeXlsxFile as unknown as (data: unknown, options: unknown) => Promise<Buffer>;
    const xlsx = await write(
      [
        [
          [cell('Name'), cell('Objective'), cell('Budget'), cell('Budget type')],
          [cell('Winter Sale'), cell('impressions'), cell(19.99), cell('daily')],
        ],
        [
          [cell('Campaign'), cell('Name'), cell('Bid'), cell('Countries')],
          [cell('Winter Sale'), cell('Warm plants'), cell(2.5), cell('US, DE')],
        ],
        [
          [cell('Ad group'), cell('Name'), cell('Title'), cell('Target URL')],
          [
            cell('Warm plants'),
            cell('Cosy one'),
            cell('Plants for winter'),
            cell('https://shop.example.com/w'),
          ],
        ],
      ],
      { sheets: ['Campaigns', 'Ad groups', 'Ads'], buffer: true },
    );
    const plan = await ok<WorkbookPlan>('ads_plan_workbook', {
      account_id: acct,
      workbook_base64: Buffer.from(xlsx).toString('base64'),
    });
    assert.equal(plan.source, 'workbook');
    assert.equal(plan.job.validate_only, false);
    assert.equal(plan.job.operations[0]?.body.budget_micros, 19_990_000);
    // A CPM bid of 2.50 is sent per thousand impressions in a bulk job.
    assert.deepEqual(plan.job.operations[1]?.body.bidding_config, {
      billing_event_type: 'impression',
      strategy: 'fixed_bid',
      max_bid_micros: 2_500_000,
    });
    assert.equal(plan.ad_count, 1);
  });

  test('an XLSX row hidden in the campaigns sheet is refused, not planned unseen', async () => {
    const xlsx = xlsxFile([
      {
        name: 'Campaigns',
        rows: [
          ['name', 'objective', 'budget', 'budget_type'],
          ['Winter Sale', 'clicks', 19.99, 'daily'],
          ['Hidden Sale', 'clicks', 5000, 'daily'],
        ],
        hiddenRows: [3],
      },
    ]);
    const err = await refused('ads_plan_workbook', {
      account_id: acct,
      workbook_base64: Buffer.from(xlsx).toString('base64'),
    });
    assert.equal(err.code, 'invalid_argument');
    assert.match(
      err.message,
      /^workbook_base64: the sheet "Campaigns" hides row 3, which holds values: what is planned is what the spreadsheet shows/,
    );
  });

  test('a conversion campaign and bad rows are refused with sheet, row and column', async () => {
    const conversion = await refused('ads_plan_workbook', {
      account_id: acct,
      sheets: { ...sheets, campaigns: [{ ...sheets.campaigns[0], objective: 'conversions' }] },
    });
    assert.match(conversion.message, /campaigns row 1, column objective: conversion campaigns are refused/);
    // Each refused cell is an issue at its place in `sheets`, rows counted from 0 as the array is:
    // the campaign row, and the rows that name the campaign it would have made.
    const cells = (conversion as typeof conversion & { issues?: { path: string; message: string }[] }).issues;
    assert.deepEqual(
      cells?.map((i) => i.path),
      ['sheets.campaigns[0].objective', 'sheets.adgroups[0].campaign', 'sheets.ads[0].ad_group'],
    );
    assert.match(
      cells?.[0]?.message ?? '',
      /^campaigns row 1, column objective: conversion campaigns are refused/,
    );
    const bad = await refused('ads_plan_workbook', {
      account_id: acct,
      sheets: { ...sheets, adgroups: [{ ...sheets.adgroups[0], countries: 'US, XX' }] },
    });
    assert.match(bad.message, /adgroups row 1, column countries: .*"XX" is not an ISO 3166-1 alpha-2/);
    const notXlsx = await refused('ads_plan_workbook', {
      account_id: acct,
      workbook_base64: Buffer.from('name,budget\n').toString('base64'),
    });
    assert.match(notXlsx.message, /not an XLSX file/);
  });

  test('two keys of a JSON row that are the same column are refused, not one of them dropped', async () => {
    const err = await refused('ads_plan_workbook', {
      account_id: acct,
      sheets: {
        ...sheets,
        campaigns: [{ Name: 'Winter Sale', ...sheets.campaigns[0], name: 'Summer Sale' }],
      },
    });
    assert.equal(err.code, 'invalid_argument');
    assert.match(
      err.message,
      /campaigns row 1: the keys "Name" and "name" are both the column "name" \(columns are matched without regard to case, spaces and hyphens\); give it once/,
    );
  });
});

interface Item {
  item_id: string;
  revision: number;
}

/** A batch of `variants`, variant i showing the site's `/<folder>/<i + 1>.png`. */
async function saveBatch(variants: number, folder = 'winter'): Promise<Item> {
  const { item } = await ok<{ item: Item }>('ads_save_marketing_item', {
    kind: 'batch',
    name: 'Winter variants',
    data: {
      variants: Array.from({ length: variants }, (_, i) => ({
        title: `Winter pick ${i + 1}`,
        body: 'Greens that love the cold',
        target_url: `https://shop.example.com/winter/${i + 1}`,
        source_image_url: imageUrl(`/${folder}/${i + 1}.png`),
      })),
    },
  });
  return item;
}

interface Asset {
  asset_id: string;
  source_url: string | null;
  sha256: string;
}

async function assetsFrom(folder: string): Promise<Asset[]> {
  const { assets } = await ok<{ assets: Asset[] }>('ads_list_campaign_assets', {
    account_id: acct,
    limit: 100,
  });
  return assets.filter((a) => a.source_url?.startsWith(imageUrl(`/${folder}/`)));
}

const creativesOf = (body: { operations: Operation[] }) =>
  body.operations
    .filter((o) => o.type === 'create_ad')
    .map((o) => o.body.creative as Record<string, unknown>);

const batchArgs = (item: Item) => ({
  item_id: item.item_id,
  expected_revision: item.revision,
  account_id: acct,
  campaign_name: 'Winter batch',
  budget_amount: 25.5,
  budget_type: 'daily',
  objective: 'clicks',
  bid_micros: 800000,
  countries: ['US', 'GB'],
  context_hints: ['winter gardening'],
});

describe('ads_prepare_ad_batch', () => {
  test('a saved batch is prepared, approved, applied once, and its job followed with ads_get_bulk_job', async () => {
    const item = await saveBatch(3);
    const prepared = await ok<ChangeView>('ads_prepare_ad_batch', batchArgs(item));
    // Each variant's source image was fetched once and saved as a campaign asset of the account,
    // which its ad's creative names; the change pins each image's sha256.
    assert.deepEqual(['/winter/1.png', '/winter/2.png', '/winter/3.png'].map(fetched), [1, 1, 1]);
    const assets = await assetsFrom('winter');
    assert.equal(assets.length, 3);
    const creatives = creativesOf(prepared.operation.body);
    const assetOf = (i: number) => assets.find((a) => a.source_url === imageUrl(`/winter/${i + 1}.png`));
    assert.deepEqual(
      creatives.map((c) => c.asset_id),
      [0, 1, 2].map((i) => assetOf(i)?.asset_id),
    );
    assert.ok(creatives.every((c) => !('file_id' in c)));
    assert.deepEqual(
      prepared.uploads.map((u) => [u.asset_id, u.sha256, u.width, u.height, u.file_id]).sort(),
      assets.map((a) => [a.asset_id, a.sha256, 120, 100, null]).sort(),
    );
    assert.match(prepared.summary, /3 ads titled .*, each with an image/);
    assert.equal(prepared.status, 'prepared');
    assert.equal(prepared.operation.path, '/bulk_mutation_jobs');
    assert.deepEqual(
      prepared.operation.body.operations.map((o) => o.type),
      ['create_campaign', 'create_ad_group', 'create_ad', 'create_ad', 'create_ad'],
    );
    assert.ok(prepared.operation.body.operations.every((o) => o.body.status === 'paused'));
    assert.equal(prepared.operation.body.operations[0]?.body.budget_micros, 25_500_000);
    assert.deepEqual(prepared.countries, ['US', 'GB']);
    assert.match(prepared.summary, /every object paused.*campaign "Winter batch"/);
    assert.deepEqual(await ledger('/bulk_mutation_jobs'), [], 'preparing sent nothing');

    const out = JSON.parse(
      await stack.admin(['approve', prepared.change_id, '--workspace', seed.workspaceId, '--yes']),
    ) as { status: string };
    assert.equal(out.status, 'approved');
    let applied = await ok<ChangeView>('ads_apply_change', {
      change_id: prepared.change_id,
      digest: prepared.digest,
    });
    const deadline = Date.now() + 30_000;
    while (applied.status === 'applying' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      applied = await ok<ChangeView>('ads_get_change', { change_id: prepared.change_id });
    }
    assert.equal(applied.status, 'applied', JSON.stringify(applied));
    const jobId = applied.upstream_response?.id ?? '';
    assert.match(jobId, /^job_/);

    let job: BulkJob | undefined;
    for (const until = Date.now() + 20_000; Date.now() < until; ) {
      job = (await ok<{ job: BulkJob }>('ads_get_bulk_job', { account_id: acct, job_id: jobId })).job;
      if (job.status === 'succeeded' || job.status === 'failed') break;
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.equal(job?.status, 'succeeded', JSON.stringify(job));
    assert.equal(job?.succeeded_count, 5);
    assert.deepEqual(
      job?.results.map((r) => r.status),
      ['succeeded', 'succeeded', 'succeeded', 'succeeded', 'succeeded'],
    );
    // Each image was uploaded once, and the job sent names the files where the change named the
    // assets: the one difference between the body reviewed and the body sent.
    assert.equal((await ledger('/files')).length, 3, 'one upload per image');
    const fileOf = new Map(applied.uploads.map((u) => [u.asset_id, u.file_id]));
    assert.ok([...fileOf.values()].every((f) => /^file_/.test(f ?? '')));
    const expected = structuredClone(prepared.operation.body);
    for (const c of creativesOf(expected)) {
      c.file_id = fileOf.get(String(c.asset_id));
      delete c.asset_id;
    }
    const rows = await ledger('/bulk_mutation_jobs');
    assert.equal(rows.length, 1, 'the job was created upstream exactly once');
    assert.deepEqual(rows[0]?.request_body, expected);
    const adId = job?.results.find((r) => r.type === 'create_ad')?.id ?? '';
    const { ad } = await ok<{ ad: { creative: { file_id?: string; title: string } } }>('ads_get_ad', {
      account_id: acct,
      ad_id: adId,
    });
    assert.equal(ad.creative.title, 'Winter pick 1');
    assert.equal(ad.creative.file_id, fileOf.get(assetOf(0)?.asset_id ?? ''));

    // Applying again does not create a second job or upload again.
    await refused('ads_apply_change', { change_id: prepared.change_id, digest: prepared.digest });
    assert.equal((await ledger('/bulk_mutation_jobs')).length, 1);
    assert.equal((await ledger('/files')).length, 3);

    // Preparing the batch again reuses the saved images: nothing is fetched.
    const again = await ok<ChangeView>('ads_prepare_ad_batch', batchArgs(item));
    assert.deepEqual(creativesOf(again.operation.body), creatives);
    assert.deepEqual(['/winter/1.png', '/winter/2.png', '/winter/3.png'].map(fetched), [1, 1, 1]);
    assert.equal((await assetsFrom('winter')).length, 3);
  });

  test('an image that cannot be saved refuses the batch, naming each variant; the others are kept', async () => {
    const { item } = await ok<{ item: Item }>('ads_save_marketing_item', {
      kind: 'batch',
      name: 'Broken images',
      data: {
        variants: [
          ['/broken/1.png', 'Good image'],
          ['/missing.png', 'Missing image'],
          ['/page.png', 'Not an image'],
          ['/missing.png', 'Missing again'],
        ].map(([path, title]) => ({
          title,
          body: '',
          target_url: 'https://shop.example.com/broken',
          source_image_url: imageUrl(path as string),
        })),
      },
    });
    const changes = await changeCount();
    const err = await refused('ads_prepare_ad_batch', batchArgs(item));
    assert.equal(err.code, 'invalid_argument');
    assert.match(err.message, /2 could not be/);
    assert.match(
      err.message,
      /variants\[1\]\.source_image_url https:\/\/img\.example\.com:\d+\/missing\.png: .*404/,
    );
    assert.match(err.message, /variants\[2\]\.source_image_url [^;]*\/page\.png: /);
    assert.match(err.message, /variants\[3\]\.source_image_url [^;]*\/missing\.png/);
    assert.doesNotMatch(err.message, /variants\[0\]/);
    // Each variant whose image could not be saved is an issue at its source_image_url, in order.
    const { issues } = err as typeof err & { issues?: { path: string; message: string }[] };
    assert.deepEqual(
      issues?.map((i) => i.path),
      ['variants[1].source_image_url', 'variants[2].source_image_url', 'variants[3].source_image_url'],
    );
    assert.match(
      issues?.[0]?.message ?? '',
      /^variants\[1\]\.source_image_url https:\/\/img\.example\.com:\d+\/missing\.png: .*404/,
    );
    assert.match(issues?.[1]?.message ?? '', /^variants\[2\]\.source_image_url [^ ]*\/page\.png: /);
    assert.equal(fetched('/missing.png'), 1, 'a URL two variants show is fetched once');
    assert.equal(await changeCount(), changes, 'no change recorded');
    // The good image was saved, and is reused when the batch is fixed.
    assert.equal((await assetsFrom('broken')).length, 1);
    assert.equal(fetched('/broken/1.png'), 1);
  });

  test('a caller who may not read the saved batch is refused by the marketing service, and no image is fetched', async () => {
    const item = await saveBatch(1, 'unreadable');
    const { token: writeOnly } = JSON.parse(
      await stack.admin(['create-token', '--workspace', seed.workspaceId, '--scopes', 'write']),
    ) as { token: string };
    const other = await newWorkspaceToken(stack, 'Another workspace');
    const writer = await connectClient('v2-2026', stack.mcpUrl, writeOnly);
    const outsider = await connectClient('v2-2026', stack.mcpUrl, other.token);
    try {
      const unscoped = await refused('ads_prepare_ad_batch', batchArgs(item), writer);
      assert.equal(unscoped.code, 'permission_denied');
      assert.match(
        unscoped.message,
        /^reading a marketing item needs the read scope; this caller has role \w+ and scopes \[write\]$/,
      );
      const elsewhere = await refused('ads_prepare_ad_batch', batchArgs(item), outsider);
      assert.deepEqual(elsewhere, {
        code: 'not_found',
        message: `marketing item ${item.item_id} does not exist`,
      });
    } finally {
      await writer.close();
      await outsider.close();
    }
    assert.equal(fetched('/unreadable/1.png'), 0);
    assert.deepEqual(await assetsFrom('unreadable'), []);
  });

  test('a batch refused for its arguments fetches and saves no image', async () => {
    const item = await saveBatch(2, 'refused');
    await refused('ads_prepare_ad_batch', { ...batchArgs(item), budget_amount: 19.999 });
    await refused('ads_prepare_ad_batch', { ...batchArgs(item), campaign_name: '   ' });
    assert.deepEqual(['/refused/1.png', '/refused/2.png'].map(fetched), [0, 0]);
    assert.deepEqual(await assetsFrom('refused'), []);
  });

  test('ads_preflight_change plans a batch as ads_prepare_ad_batch would, recording and fetching nothing', async () => {
    const item = await saveBatch(2, 'preflight');
    const changes = await changeCount();
    type Preflight = {
      would_prepare: boolean;
      notes: string[];
      change: { summary: string; digest: string; operation: { path: string; body_json: string } };
    };
    const preflight = () =>
      ok<Preflight>('ads_preflight_change', {
        account_id: acct,
        operation: 'ads_prepare_ad_batch',
        args: batchArgs(item),
      });
    const pre = await preflight();
    assert.equal(pre.would_prepare, true);
    assert.equal(pre.change.operation.path, '/bulk_mutation_jobs');
    assert.equal(await changeCount(), changes, 'a preflight records nothing');
    // Its images are not saved yet: planned without them, and the notes say so.
    assert.deepEqual(['/preflight/1.png', '/preflight/2.png'].map(fetched), [0, 0]);
    assert.deepEqual(await assetsFrom('preflight'), []);
    assert.equal(pre.notes.length, 1);
    assert.match(
      pre.notes[0] ?? '',
      /^2 of the 2 variants show a source image not saved .*\(variants\[0\], variants\[1\]\).*its digest differs from this one\.$/,
    );
    const body = JSON.parse(pre.change.operation.body_json) as { operations: Operation[] };
    assert.ok(creativesOf(body).every((c) => !('asset_id' in c)));
    const prepared = await ok<ChangeView>('ads_prepare_ad_batch', batchArgs(item));
    assert.notEqual(prepared.digest, pre.change.digest);
    // Once they are saved, the preflight plans exactly what preparing records.
    const after = await preflight();
    assert.deepEqual(after.notes, []);
    assert.equal(after.change.digest, prepared.digest);
    assert.equal(after.change.summary, prepared.summary);
    assert.deepEqual(JSON.parse(after.change.operation.body_json), prepared.operation.body);
    assert.deepEqual(['/preflight/1.png', '/preflight/2.png'].map(fetched), [1, 1]);
    const stale = await ok<{ would_prepare: boolean; refusal: { code: string } }>('ads_preflight_change', {
      account_id: acct,
      operation: 'ads_prepare_ad_batch',
      args: { ...batchArgs(item), expected_revision: item.revision + 1 },
    });
    assert.equal(stale.would_prepare, false);
    assert.equal(stale.refusal.code, 'stale_revision');
  });

  test('ads_preflight_change refuses `current` for a batch, which has no target, rather than ignore it', async () => {
    const item = await saveBatch(1);
    const err = await refused('ads_preflight_change', {
      account_id: acct,
      operation: 'ads_prepare_ad_batch',
      args: batchArgs(item),
      current: { anything: 1 },
    });
    assert.equal(err.code, 'invalid_argument');
    assert.match(err.message, /^`current` does not apply to ads_prepare_ad_batch: an ad batch creates/);
  });

  test('a batch is prepared as given: titles counted in code points, hints neither trimmed nor split', async () => {
    const { item } = await ok<{ item: Item }>('ads_save_marketing_item', {
      kind: 'batch',
      name: 'Emoji variants',
      data: {
        variants: [
          {
            title: '😀'.repeat(30),
            body: 'Smile',
            target_url: 'https://shop.example.com/smile',
            source_image_url: imageUrl('/smile.png'),
          },
        ],
      },
    });
    const hints = ['indoor plants', '  padded hint  ', 'garden, patio'];
    const pre = await ok<{ would_prepare: boolean; change: { operation: { body_json: string } } }>(
      'ads_preflight_change',
      {
        account_id: acct,
        operation: 'ads_prepare_ad_batch',
        args: { ...batchArgs(item), context_hints: hints },
      },
    );
    assert.equal(pre.would_prepare, true);
    const [, group, ad] = (JSON.parse(pre.change.operation.body_json) as { operations: Operation[] })
      .operations;
    assert.deepEqual(group?.body.context_hints, hints);
    assert.deepEqual(ad?.body.creative, {
      type: 'chat_card',
      title: '😀'.repeat(30),
      body: 'Smile',
      target_url: 'https://shop.example.com/smile',
    });
  });

  test('a refusal names only the arguments broken and the rule, with no follow-on errors', async () => {
    const item = await saveBatch(2);
    const bid = await refused('ads_prepare_ad_batch', { ...batchArgs(item), bid_micros: 30_400_000_000_001 });
    assert.equal(
      bid.message,
      'bid_micros must be from 1 to 30400000000000, the largest bid an ad group accepts (got 30400000000001)',
    );
    const budget = await refused('ads_prepare_ad_batch', { ...batchArgs(item), budget_amount: 19.999 });
    assert.equal(budget.message, 'budget_amount: amount 19.999 has 3 decimal places, but USD has 2');
    const blank = await refused('ads_prepare_ad_batch', { ...batchArgs(item), campaign_name: '   ' });
    assert.match(blank.message, /`campaign_name` must contain a visible character/);
    const hint = await refused('ads_prepare_ad_batch', {
      ...batchArgs(item),
      context_hints: ['indoor plants', '   '],
    });
    assert.match(hint.message, /`context_hints\[1\]` must contain a visible character/);
  });

  test('a stale expected_revision is refused, stating the current one', async () => {
    const item = await saveBatch(1);
    const { item: updated } = await ok<{ item: Item }>('ads_save_marketing_item', {
      item_id: item.item_id,
      expected_revision: item.revision,
      kind: 'batch',
      name: 'Winter variants, edited',
      data: {
        variants: [
          {
            title: 'Edited pick',
            body: '',
            target_url: 'https://shop.example.com/e',
            source_image_url: imageUrl('/e.png'),
          },
        ],
      },
    });
    const changes = await changeCount();
    const stale = await refused('ads_prepare_ad_batch', batchArgs(item));
    assert.equal(stale.code, 'stale_revision');
    assert.match(stale.message, new RegExp(`current revision ${updated.revision}`));
    assert.equal(await changeCount(), changes);
  });

  test('another kind of item, a lifetime budget and an over-limit bid are refused', async () => {
    const { item: brief } = await ok<{ item: Item }>('ads_save_marketing_item', {
      kind: 'playbook',
      name: 'Not a batch',
      data: { guidance: 'Lead with the offer.', evidence: 'general_guidance' },
    });
    const kind = await refused('ads_prepare_ad_batch', batchArgs(brief));
    assert.match(kind.message, /is a playbook, not a batch/);
    const item = await saveBatch(1);
    const lifetime = await refused('ads_prepare_ad_batch', { ...batchArgs(item), budget_type: 'lifetime' });
    assert.match(lifetime.message, /lifetime needs an end date/);
    const bid = await refused('ads_prepare_ad_batch', { ...batchArgs(item), bid_micros: 30_400_000_000_001 });
    assert.match(bid.message, /bid_micros must be from 1 to 30400000000000/);
  });

  test("the account's standards hold for a batch: a campaign name without the prefix is refused", async () => {
    const item = await saveBatch(1);
    await ok('ads_save_account_standard', {
      account_id: acct,
      name: 'Naming',
      kind: 'standard',
      data: { naming_prefix: 'ACME-' },
    });
    try {
      const named = await refused('ads_prepare_ad_batch', batchArgs(item));
      assert.match(named.message, /must start with ACME- \(standard Naming\)/);
      const ok2 = await ok<ChangeView>('ads_prepare_ad_batch', {
        ...batchArgs(item),
        campaign_name: 'ACME-Winter batch',
      });
      assert.equal(ok2.status, 'prepared');
    } finally {
      await archiveAccountStandards(e2e.db.url, acct);
    }
  });

  test('an account without bulk access is refused at prepare', async () => {
    const item = await saveBatch(1);
    const client = new pg.Client({ connectionString: e2e.db.url });
    await client.connect();
    try {
      await client.query('UPDATE ads_sandbox.accounts SET bulk_access = false WHERE id = $1', [
        account.upstream_account_id,
      ]);
      const denied = await refused('ads_prepare_ad_batch', batchArgs(item));
      assert.match(denied.message, /has no bulk access/);
    } finally {
      await client.query('UPDATE ads_sandbox.accounts SET bulk_access = true WHERE id = $1', [
        account.upstream_account_id,
      ]);
      await client.end();
    }
  });
});
