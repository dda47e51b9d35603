/**
 * The marketing item lists' field rules are their proto's, checked by the service itself: a caller
 * that is not the gateway gets the same refusal, naming the field and the rule, not a page cut
 * down or a filter that silently matches nothing.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { AssetService } from '@adsmcp/proto/marketing/v1/assets_pb';
import { CompetitorService } from '@adsmcp/proto/marketing/v1/competitors_pb';
import { ImportService } from '@adsmcp/proto/marketing/v1/imports_pb';
import { ReportService } from '@adsmcp/proto/marketing/v1/reports_pb';
import { Code, ConnectError } from '@connectrpc/connect';
import { principal, type RunningService, startService } from './service.ts';

let svc: RunningService;

before(async () => {
  svc = await startService();
});

after(async () => {
  await svc?.stop();
});

async function refusal(call: Promise<unknown>): Promise<string> {
  const err = await call.then(
    () => assert.fail('the call was not refused'),
    (e: unknown) => ConnectError.from(e),
  );
  assert.equal(Code[err.code], Code[Code.InvalidArgument], err.rawMessage);
  return err.rawMessage;
}

test('a list of marketing items out of its bounds is refused naming each field and its rule', async () => {
  assert.equal(
    await refusal(
      svc.client.listMarketingItems(
        { kind: 'poster', tag: 't'.repeat(101), limit: 1000 },
        svc.as(principal()),
      ),
    ),
    '`kind` must be one of brand, brief, playbook, inspiration, batch, creative (got "poster"); ' +
      '`tag` must be at most 100 characters (got 101); `limit` must be an integer from 1 to 100 (got 1000)',
  );
  assert.equal(
    await refusal(svc.client.getMarketingContext({ offset: -1 }, svc.as(principal()))),
    '`offset` must be an integer from 0 to 100000 (got -1)',
  );
  const page = await svc.client.listMarketingItems({ kind: 'brief', limit: 100 }, svc.as(principal()));
  assert.equal(page.total, 0);
});

test('competitor and campaign asset pages beyond their bounds are refused, not cut down', async () => {
  assert.equal(
    await refusal(svc.clientOf(CompetitorService).listCompetitorSources({ limit: 101 }, svc.as(principal()))),
    '`limit` must be an integer from 1 to 100 (got 101)',
  );
  assert.equal(
    await refusal(
      svc
        .clientOf(AssetService)
        .listCampaignAssets(
          { accountId: '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90', offset: 100_001 },
          svc.as(principal()),
        ),
    ),
    '`offset` must be an integer from 0 to 100000 (got 100001)',
  );
});

const ACCOUNT = '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90';

test('a marketing item saved straight to the service is held to the bounds of the tool', async () => {
  assert.equal(
    await refusal(
      svc.client.saveMarketingItem(
        {
          itemId: 'item-1',
          kind: 'poster',
          name: 'Spring',
          tags: Array.from({ length: 31 }, (_, i) => `t${i}`),
        },
        svc.as(principal()),
      ),
    ),
    '`item_id` must be a UUID (got "item-1"); `kind` must be one of brand, brief, playbook, inspiration, batch, creative (got "poster"); ' +
      '`tags` must have at most 30 items (got 31); `data` is required',
  );
  assert.equal(
    await refusal(
      svc.client.saveMarketingItem(
        { kind: 'brand', name: '', tags: ['spring', 'spring', ''], data: {} },
        svc.as(principal()),
      ),
    ),
    '`name` must be 1 to 200 characters (got 0); `tags[1]` repeats an earlier item; items must be unique; ' +
      '`tags[2]` must be 1 to 100 characters (got 0)',
  );
});

test('a campaign asset saved out of its bounds is refused naming each field and its rule', async () => {
  assert.equal(
    await refusal(
      svc
        .clientOf(AssetService)
        .saveCampaignAsset({ accountId: 'acct-1', name: 'n'.repeat(201) }, svc.as(principal())),
    ),
    '`account_id` must be a UUID (got "acct-1"); `name` must be 1 to 200 characters (got 201)',
  );
  assert.equal(
    await refusal(
      svc.clientOf(AssetService).saveCampaignAsset(
        {
          accountId: ACCOUNT,
          name: '',
          sourceUrl: `https://cdn.example/${'a'.repeat(2029)}`,
          mimeType: 'image/gif',
        },
        svc.as(principal()),
      ),
    ),
    '`name` must be 1 to 200 characters (got 0); `source_url` must be at most 2048 characters (got 2049); ' +
      '`mime_type` must be one of image/png, image/jpeg (got "image/gif")',
  );
});

test('a competitor source saved out of its bounds is refused naming each field and its rule', async () => {
  assert.equal(
    await refusal(
      svc.clientOf(CompetitorService).saveCompetitorSource(
        {
          accountId: ACCOUNT,
          name: 'Rival',
          url: 'https://rival.example.com/',
          intervalHours: 745,
          literals: ['x'.repeat(201)],
        },
        svc.as(principal()),
      ),
    ),
    '`interval_hours` must be an integer from 1 to 744 (got 745); `literals[0]` must be 1 to 200 characters (got 201)',
  );
});

test('imports out of their bounds are refused before anything is queued', async () => {
  const imports = svc.clientOf(ImportService);
  assert.equal(
    await refusal(
      imports.importPerformance(
        {
          source: 'vendor_c_ads',
          name: 'October',
          currency: 'EUR',
          timezone: 'Europe/Berlin',
          attribution: '7-day click',
          since: '2026-10-01',
          until: '2026-10-31',
          csv: '',
        },
        svc.as(principal()),
      ),
    ),
    // The rule allows one character more than a CSV may have, for a leading byte-order mark.
    '`source` must be one of vendor_a_ads, vendor_b_ads, other (got "vendor_c_ads"); `csv` must be 1 to 1500001 characters (got 0)',
  );
  assert.equal(
    await refusal(
      imports.importBusinessOutcomes(
        { accountId: ACCOUNT, source: 'crm eu', name: 'Q4', currency: 'EUR', attribution: 'last click' },
        svc.as(principal()),
      ),
    ),
    '`source` must match ^[A-Za-z0-9_-]+$ (got "crm eu"); `rows` must have 1 to 5000 items (got 0)',
  );
  assert.equal(
    await refusal(
      imports.importBusinessOutcomes(
        {
          accountId: ACCOUNT,
          source: 'crm',
          name: 'Q4',
          currency: 'eur',
          attribution: '',
          rows: [
            {
              externalId: '',
              occurredAt: '2026-10-12T09:00:00Z',
              kind: 'sale',
              adId: 'ad 1',
              value: '1,5',
              quantity: 0,
            },
          ],
        },
        svc.as(principal()),
      ),
    ),
    '`currency` must match ^[A-Z]{3}$ (got "eur"); `attribution` must be 1 to 1000 characters (got 0); ' +
      '`rows[0].external_id` must be 1 to 255 characters (got 0); ' +
      '`rows[0].kind` must be one of qualified_lead, booking, order, refund (got "sale"); ' +
      '`rows[0].ad_id` must match ^[A-Za-z0-9_.:-]+$ (got "ad 1"); ' +
      '`rows[0].value` must match ^\\d{1,20}(\\.\\d{1,10})?$ (got "1,5"); ' +
      '`rows[0].quantity` must be an integer from 1 to 1000000 (got 0)',
  );
  assert.equal(
    await refusal(imports.getPerformanceImport({ importId: 'imp-1' }, svc.as(principal()))),
    '`import_id` must be a UUID (got "imp-1")',
  );
});

test('a report asked for with an id or page out of its rules is refused naming the field', async () => {
  const reports = svc.clientOf(ReportService);
  assert.equal(
    await refusal(reports.getPerformanceReport({ reportId: 'rep-1' }, svc.as(principal()))),
    '`report_id` must be a UUID (got "rep-1")',
  );
  assert.equal(
    await refusal(reports.listPerformanceReports({ limit: 101 }, svc.as(principal()))),
    '`limit` must be an integer from 1 to 100 (got 101)',
  );
  assert.equal(
    await refusal(
      reports.createPerformanceReport(
        { accountId: ACCOUNT, name: '', since: '2026-10-01', until: '2026-10-07', campaignId: 'cmp 1' },
        svc.as(principal()),
      ),
    ),
    '`name` must be 1 to 200 characters (got 0); `campaign_id` must match ^[A-Za-z0-9_-]+$ (got "cmp 1")',
  );
});
