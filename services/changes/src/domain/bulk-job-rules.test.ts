import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidArgumentError, InvalidArgumentIssuesError } from '@adsmcp/runtime/errors';
import {
  type BatchVariant,
  type BulkAccount,
  checkBulkJob,
  compileAdBatch,
  compileBulkJob,
  describeIssues,
  jsonRows,
  type Sheets,
  summarizeBulkJob,
} from './bulk-job-rules.ts';

const usd: BulkAccount = { name: 'Demo Store (USD)', currency: 'USD', timeZone: 'America/New_York' };
const rows = (...cells: Record<string, unknown>[]) => cells.map((c, i) => ({ row: i + 2, cells: c }));
const flags = { validateOnly: false, partialFailure: false };

const workbook = (over: Partial<Sheets> = {}): Sheets => ({
  campaigns: rows({ name: 'Spring Sale', objective: 'clicks', budget: '19.99', budget_type: 'daily' }),
  adgroups: rows({ campaign: 'Spring Sale', name: 'Plants', bid: '0.3', countries: 'US, DE' }),
  ads: rows(
    {
      ad_group: 'Plants',
      name: 'Ad one',
      title: 'Two for one',
      body: 'This week',
      target_url: 'https://shop.example.com/a',
    },
    { ad_group: 'Plants', name: 'Ad two', title: 'Free delivery', target_url: 'https://shop.example.com/b' },
  ),
  ...over,
});

test('a workbook compiles to one job that creates every object paused, linked by refs, money exact', () => {
  const { plan, issues } = compileBulkJob(workbook(), usd, { validateOnly: true, partialFailure: true });
  assert.deepEqual(issues, []);
  assert.equal(plan.body.validate_only, true);
  assert.equal(plan.body.partial_failure, true);
  const [campaign, group, ad1, ad2] = plan.body.operations;
  assert.deepEqual(campaign, {
    type: 'create_campaign',
    ref: 'c1',
    body: {
      name: 'Spring Sale',
      objective: 'clicks',
      budget_micros: 19_990_000,
      budget_type: 'daily',
      status: 'paused',
    },
  });
  assert.deepEqual(group?.body, {
    campaign_id: 'ref:c1',
    name: 'Plants',
    status: 'paused',
    bidding_config: { billing_event_type: 'click', strategy: 'fixed_bid', max_bid_micros: 300_000 },
  });
  assert.equal(ad1?.body.ad_group_id, 'ref:g1');
  assert.equal(ad2?.body.status, 'paused');
  assert.deepEqual(plan.adGroups[0]?.countries, ['US', 'DE']);
  assert.equal(plan.adCount, 2);
  checkBulkJob(plan.body as unknown as Record<string, unknown>);
});

test('a conversion campaign is refused, naming the sheet, row and column', () => {
  const { issues } = compileBulkJob(
    workbook({
      campaigns: rows({ name: 'Buyers', objective: 'conversions', budget: '10', budget_type: 'daily' }),
    }),
    usd,
    flags,
  );
  assert.equal(issues[0]?.sheet, 'campaigns');
  assert.equal(issues[0]?.row, 2);
  assert.equal(issues[0]?.column, 'objective');
  assert.match(issues[0]?.message ?? '', /conversion campaigns are refused/);
});

test('bad rows are all reported with sheet, row number and column', () => {
  const { issues } = compileBulkJob(
    workbook({
      campaigns: rows(
        { name: 'Spring Sale', objective: 'clicks', budget: '1.999', budget_type: 'daily' },
        { name: 'Big', objective: 'clicks', budget: '2000000000', budget_type: 'daily', status: 'active' },
      ),
      adgroups: rows({ campaign: 'Spring Sale', name: 'Plants', bid: '0.3', countries: 'US, XX' }),
    }),
    usd,
    flags,
  );
  const where = issues.map((i) => `${i.sheet}:${i.row}:${i.column}`);
  assert.ok(where.includes('campaigns:2:budget'), where.join());
  assert.ok(where.includes('campaigns:3:budget'), where.join());
  assert.ok(where.includes('campaigns:3:status'), where.join());
  assert.ok(where.includes('adgroups:2:campaign') || where.includes('adgroups:2:countries'), where.join());
  assert.match(
    describeIssues(issues),
    /campaigns row 2, column budget: amount 1.999 has 3 decimal places, but USD has 2/,
  );
});

test('a bid above the largest an ad group accepts, and an unknown column, are refused', () => {
  const { issues } = compileBulkJob(
    workbook({
      adgroups: rows({
        campaign: 'Spring Sale',
        name: 'Plants',
        bid_micros: '30400000000001',
        countries: 'US',
        colour: 'red',
      }),
    }),
    usd,
    flags,
  );
  const messages = issues.map((i) => `${i.column}: ${i.message}`).join('\n');
  assert.match(messages, /bid_micros: bid_micros must be from 1 to 30400000000000/);
  assert.match(messages, /colour: unknown column "colour"/);
});

test('launch and end dates become the instants of local midnight, previewed with a note', () => {
  const { plan, issues } = compileBulkJob(
    workbook({
      campaigns: rows({
        name: 'Spring Sale',
        objective: 'impressions',
        budget: '500',
        budget_type: 'lifetime',
        launch_date: '2026-12-01',
        end_date: new Date('2026-12-31T00:00:00Z'),
      }),
      adgroups: rows({ campaign: 'Spring Sale', name: 'Plants', bid: '2.50', countries: ['FR'] }),
    }),
    usd,
    flags,
  );
  assert.deepEqual(issues, []);
  const body = plan.body.operations[0]?.body;
  assert.equal(body?.start_time, '2026-12-01T05:00:00Z');
  assert.equal(body?.end_time, '2027-01-01T05:00:00Z');
  assert.equal(body?.status, 'paused');
  assert.match(plan.schedule[0]?.note ?? '', /previewed only/);
  // A CPM bid travels per thousand impressions in a bulk job.
  assert.equal(plan.adGroups[0]?.bidMicros, 2_500_000n);
});

test('a lifetime budget without an end date is refused', () => {
  const { issues } = compileBulkJob(
    workbook({
      campaigns: rows({ name: 'Spring Sale', objective: 'clicks', budget: '500', budget_type: 'lifetime' }),
    }),
    usd,
    flags,
  );
  assert.ok(issues.some((i) => i.column === 'end_date' && /required with a lifetime budget/.test(i.message)));
});

const batch = {
  campaignName: 'Winter batch',
  budgetAmount: 25.5,
  budgetType: 'daily',
  objective: 'clicks',
  bidMicros: 800_000n,
  countries: ['US', 'GB'],
  contextHints: ['gardening'],
  variants: [
    {
      title: 'Two for one',
      body: 'This week',
      targetUrl: 'https://shop.example.com/a',
      sourceImageUrl: 'https://img.example.com/a.png',
    },
    {
      title: 'Free delivery',
      body: '',
      targetUrl: 'https://shop.example.com/b',
      sourceImageUrl: 'https://img.example.com/b.png',
    },
  ],
};

test('an ad batch compiles to one paused campaign, one ad group and an ad per variant', () => {
  const plan = compileAdBatch(batch, usd);
  assert.deepEqual(
    plan.body.operations.map((o) => o.type),
    ['create_campaign', 'create_ad_group', 'create_ad', 'create_ad'],
  );
  assert.equal(plan.body.operations[0]?.body.budget_micros, 25_500_000);
  assert.deepEqual(plan.body.operations[1]?.body.context_hints, ['gardening']);
  assert.equal(plan.body.validate_only, false);
  assert.ok(plan.body.operations.every((o) => o.body.status === 'paused'));
  assert.match(
    summarizeBulkJob(plan.body as unknown as Record<string, unknown>, 'Shop'),
    /every object paused.*campaign "Winter batch".*2 ads titled "Two for one", "Free delivery"/,
  );
});

test("each variant's saved source image is its ad's creative asset_id, and the summary says so", () => {
  const assetId = '0b0e4b6a-6a0e-4d8e-9c61-3c1f0f7b8a11';
  const [first, second] = batch.variants as [BatchVariant, BatchVariant];
  const plan = compileAdBatch({ ...batch, variants: [{ ...first, assetId }, second] }, usd);
  const creatives = plan.body.operations
    .filter((o) => o.type === 'create_ad')
    .map((o) => o.body.creative as Record<string, unknown>);
  assert.equal(creatives[0]?.asset_id, assetId);
  assert.equal('asset_id' in (creatives[1] ?? {}), false, 'a variant without a saved image has none');
  const summary = (p: typeof plan) => summarizeBulkJob(p.body as unknown as Record<string, unknown>, 'Shop');
  assert.match(summary(plan), /2 ads titled "Two for one", "Free delivery", 1 of them with an image/);
  const both = compileAdBatch(
    {
      ...batch,
      variants: [
        { ...first, assetId },
        { ...second, assetId },
      ],
    },
    usd,
  );
  assert.match(summary(both), /2 ads titled .*, each with an image/);
  assert.doesNotMatch(summary(compileAdBatch(batch, usd)), /with an image/);
});

test("the summary a reviewer reads gives a bid's unit: per click, or per thousand impressions for a CPM", () => {
  const summary = (objective: string) =>
    summarizeBulkJob(
      compileAdBatch({ ...batch, objective }, usd).body as unknown as Record<string, unknown>,
      'Shop',
    );
  assert.match(summary('clicks'), /fixed bid 800000 micros per click\)/);
  assert.match(summary('impressions'), /fixed bid 800000 micros per thousand impressions \(CPM\)\)/);
});

test('an ad batch refuses an unknown country, JPY fractions and a lifetime budget, naming the argument', () => {
  const refused = (over: Partial<typeof batch>, account: BulkAccount, message: RegExp) =>
    assert.throws(
      () => compileAdBatch({ ...batch, ...over }, account),
      (e: unknown) => e instanceof InvalidArgumentError && message.test(e.message),
    );
  refused({ countries: ['US', 'ZZ'] }, usd, /^countries: "ZZ" is not an ISO 3166-1 alpha-2 country code/);
  refused({ budgetAmount: 1.5 }, { ...usd, currency: 'JPY' }, /budget_amount: .*JPY has no minor units/);
  refused({ budgetType: 'lifetime' }, usd, /lifetime needs an end date/);
  refused({ objective: 'conversions' }, usd, /objective: conversion campaigns are refused/);
});

test("an ad batch's refusal lists each issue at the argument it names, as the tool error's issues", () => {
  const [first, second] = batch.variants as [BatchVariant, BatchVariant];
  assert.throws(
    () =>
      compileAdBatch(
        { ...batch, countries: ['US', 'ZZ'], variants: [first, { ...second, title: 'x'.repeat(51) }] },
        usd,
      ),
    (e: unknown) => {
      assert.ok(e instanceof InvalidArgumentIssuesError, 'the refusal carries its issues');
      assert.deepEqual(
        e.issues.map((i) => i.path),
        ['countries', 'variants[1].title'],
      );
      assert.match(e.issues[1]?.message ?? '', /^variants\[1\]\.title /);
      return true;
    },
  );
});

test('a job body that would create an active object or a conversion campaign is refused at prepare', () => {
  const plan = compileAdBatch(batch, usd);
  const body = JSON.parse(JSON.stringify(plan.body)) as { operations: { body: Record<string, unknown> }[] };
  (body.operations[2] as { body: Record<string, unknown> }).body.status = 'active';
  assert.throws(() => checkBulkJob(body), /operations\[2\]`.body.status must be "paused"/);
  const conv = JSON.parse(JSON.stringify(plan.body)) as { operations: { body: Record<string, unknown> }[] };
  (conv.operations[0] as { body: Record<string, unknown> }).body.objective = 'conversions';
  assert.throws(() => checkBulkJob(conv), /conversion campaigns are refused/);
});

test('a job body sent to be prepared is held to the ad group and ad bodies the prepare tools publish, by field', () => {
  const job = () =>
    JSON.parse(JSON.stringify(compileAdBatch(batch, usd).body)) as { operations: { body: Fields }[] };
  type Fields = Record<string, unknown>;
  const group = job();
  (group.operations[1] as { body: Fields }).body.name = 'g'.repeat(1001);
  (group.operations[1] as { body: Fields }).body.countries = ['US'];
  assert.throws(
    () => checkBulkJob(group),
    (e: unknown) =>
      e instanceof InvalidArgumentError &&
      e.message ===
        'unknown property of `body.operations[1].body` `countries`; allowed: campaign_id, name, description, ' +
          'context_hints, status, bidding_config, product_set, landing_page_configuration; ' +
          '`body.operations[1].body.name` must be 3 to 1000 characters (got 1001)',
  );
  const ad = job();
  ((ad.operations[2] as { body: Fields }).body.creative as Fields).title = 't'.repeat(51);
  assert.throws(
    () => checkBulkJob(ad),
    (e: unknown) =>
      e instanceof InvalidArgumentError &&
      e.message === '`body.operations[2].body.creative.title` must be 1 to 50 characters (got 51)',
  );
});

const issuesOf = (over: Partial<Sheets>) =>
  compileBulkJob(workbook(over), usd, flags).issues.map((i) => `${i.sheet}:${i.column}: ${i.message}`);

test('lengths count code points, as the JSON Schemas do: 30 emoji are a title of 30 characters', () => {
  const emoji = (n: number) => '😀'.repeat(n);
  const ad = { ad_group: 'Plants', name: 'Ad one', target_url: 'https://shop.example.com/a' };
  assert.deepEqual(
    issuesOf({
      campaigns: rows({ name: emoji(150), objective: 'clicks', budget: '5', budget_type: 'daily' }),
      adgroups: rows({ campaign: emoji(150), name: 'Plants', bid: '0.3', countries: 'US' }),
      ads: rows({ ...ad, title: emoji(50), body: emoji(100) }),
    }),
    [],
  );
  assert.deepEqual(issuesOf({ ads: rows({ ...ad, title: emoji(51) }) }), [
    'ads:title: title must be 1 to 50 characters (got 51)',
  ]);
  const plan = compileAdBatch(
    { ...batch, variants: [{ ...(batch.variants[0] as BatchVariant), title: emoji(30) }] },
    usd,
  );
  const creative = plan.body.operations[2]?.body.creative as { title: string };
  assert.equal(creative.title, emoji(30));
});

test('a workbook length refused after trimming says that the spaces around the text were not counted', () => {
  assert.deepEqual(
    issuesOf({
      campaigns: rows({ name: ' ab ', objective: 'clicks', budget: '5', budget_type: 'daily' }),
      adgroups: [],
      ads: [],
    }),
    ['campaigns:name: name must be 3 to 200 characters (got 2, not counting the spaces around it)'],
  );
});

test('workbook names, titles and bodies refuse hidden characters, as every prepare tool does', () => {
  const ad = { ad_group: 'Plants', name: 'Ad one', target_url: 'https://shop.example.com/a' };
  assert.deepEqual(
    issuesOf({
      campaigns: rows({ name: 'Spring\u200BSale', objective: 'clicks', budget: '5', budget_type: 'daily' }),
      adgroups: [],
      ads: [],
    }),
    [
      'campaigns:name: name must not contain the invisible character U+200B: control, format and blank characters hide or change what the text shows',
    ],
  );
  assert.deepEqual(issuesOf({ ads: rows({ ...ad, title: 'ok\u202Eevil' }) }), [
    'ads:title: title must not contain the invisible character U+202E: control, format and blank characters hide or change what the text shows',
  ]);
  assert.deepEqual(issuesOf({ ads: rows({ ...ad, title: 'ok\nnext' }) }), [
    'ads:title: title must not contain the invisible character U+000A: control, format and blank characters hide or change what the text shows',
  ]);
  assert.deepEqual(issuesOf({ ads: rows({ ...ad, title: 'Fine', body: 'line\u2028break' }) }), [
    'ads:body: body must not contain the invisible character U+2028: control, format and blank characters hide or change what the text shows',
  ]);
  assert.match(
    issuesOf({
      adgroups: rows({ campaign: 'Spring Sale', name: 'Pl\u202Ants', bid: '0.3', countries: 'US' }),
    })
      .filter((i) => i.startsWith('adgroups'))
      .join('\n'),
    /^adgroups:name: name must not contain the invisible character U\+202A/,
  );
});

test('context hints are carried as given: list items whole, text one hint per line', () => {
  const group = { campaign: 'Spring Sale', name: 'Plants', bid: '0.3', countries: 'US' };
  const hintsOf = (context_hints: unknown) => {
    const { plan, issues } = compileBulkJob(
      workbook({ adgroups: rows({ ...group, context_hints }) }),
      usd,
      flags,
    );
    assert.deepEqual(issues, []);
    return plan.body.operations[1]?.body.context_hints;
  };
  assert.deepEqual(hintsOf(['indoor plants', '  padded hint  ', 'a, b; c']), [
    'indoor plants',
    '  padded hint  ',
    'a, b; c',
  ]);
  assert.deepEqual(hintsOf('indoor plants, garden'), ['indoor plants, garden']);
  assert.deepEqual(hintsOf('indoor plants\r\ngarden; patio'), ['indoor plants', 'garden; patio']);
  const refused = (context_hints: unknown) =>
    issuesOf({ adgroups: rows({ ...group, context_hints }) }).filter((i) => i.startsWith('adgroups'));
  assert.deepEqual(refused(['indoor plants', ' ']), [
    'adgroups:context_hints: context_hints[1] must contain a visible character, not only white space',
  ]);
  assert.deepEqual(refused('one\n\nthree'), [
    'adgroups:context_hints: context_hints[1] must contain a visible character, not only white space',
  ]);
  assert.deepEqual(refused(['ok', 'a\u202Eb']), [
    'adgroups:context_hints: context_hints[1] must not contain the invisible character U+202E: control, format and blank characters hide or change what the text shows',
  ]);
  assert.deepEqual(refused(['x'.repeat(1001)]), [
    'adgroups:context_hints: context_hints[0] must be 1 to 1000 characters (got 1001)',
  ]);
});

test('an ad batch carries its arguments exactly: no trimming of the campaign name or the context hints', () => {
  const plan = compileAdBatch(
    { ...batch, campaignName: ' ab ', contextHints: ['indoor plants', '  padded hint  '] },
    usd,
  );
  assert.equal(plan.body.operations[0]?.body.name, ' ab ');
  assert.deepEqual(plan.body.operations[1]?.body.context_hints, ['indoor plants', '  padded hint  ']);
});

test('an ad batch refusal names only the arguments broken, with no follow-on about internal rows', () => {
  const message = (over: Partial<typeof batch>) => {
    try {
      compileAdBatch({ ...batch, ...over }, usd);
    } catch (e) {
      assert.ok(e instanceof InvalidArgumentError);
      return e.message;
    }
    assert.fail('the batch was not refused');
  };
  assert.equal(
    message({ bidMicros: 30_400_000_000_001n }),
    'bid_micros must be from 1 to 30400000000000, the largest bid an ad group accepts (got 30400000000001)',
  );
  assert.equal(
    message({ budgetAmount: 19.999 }),
    'budget_amount: amount 19.999 has 3 decimal places, but USD has 2',
  );
  assert.equal(message({ countries: ['US', 'US'] }), 'countries lists US twice');
  assert.equal(
    message({ campaignName: '   ' }),
    'campaign_name must contain a visible character, not only white space',
  );
  assert.equal(message({ campaignName: ' a' }), 'campaign_name must be 3 to 200 characters (got 2)');
  assert.equal(
    message({ contextHints: ['ok', 'fine', 'good', '   '] }),
    'context_hints[3] must contain a visible character, not only white space',
  );
  // Every argument broken at once is named, each once.
  assert.equal(
    message({ budgetAmount: 19.999, bidMicros: 0n, campaignName: 'ab' }),
    'campaign_name must be 3 to 200 characters (got 2); budget_amount: amount 19.999 has 3 decimal places, ' +
      'but USD has 2; bid_micros must be from 1 to 30400000000000, the largest bid an ad group accepts (got 0)',
  );
  assert.equal(
    message({ variants: [{ ...(batch.variants[0] as BatchVariant), title: '   ' }] }),
    'variants[0].title must contain a visible character, not only white space',
  );
});

test('a campaign end date whose midnight RFC 3339 cannot write is refused, not sent as a six-digit year', () => {
  assert.deepEqual(
    issuesOf({
      campaigns: rows({
        name: 'Spring Sale',
        objective: 'clicks',
        budget: '5',
        budget_type: 'daily',
        end_date: '9999-12-31',
      }),
    }),
    [
      'campaigns:end_date: end_date 9999-12-31 (ending at the midnight after it) is +010000-01-01T05:00:00Z in UTC, which RFC 3339 cannot write: its years are 0000 to 9999',
    ],
  );
});

test('a target_url follows the rule of the other tools: https, a host, no spaces or backslashes', () => {
  const ad = { ad_group: 'Plants', name: 'Ad one', title: 'Two for one' };
  const urlIssues = (target_url: unknown) => issuesOf({ ads: rows({ ...ad, target_url }) });
  assert.deepEqual(urlIssues('https://bücher.example/a b'), [
    'ads:target_url: target_url must be an https URL with no spaces or backslashes, of at most 2048 characters (got "https://bücher.example/a b")',
  ]);
  assert.deepEqual(urlIssues('https://shop.example.com\\spring'), [
    'ads:target_url: target_url must be an https URL with no spaces or backslashes, of at most 2048 characters (got "https://shop.example.com\\\\spring")',
  ]);
  assert.deepEqual(urlIssues('http://shop.example.com/a'), [
    'ads:target_url: target_url must be an https URL, of at most 2048 characters (got "http://shop.example.com/a")',
  ]);
  assert.match(urlIssues('https:shop.example.com').join(), /target_url must be an https URL/);
  assert.match(
    issuesOf({
      ads: rows({ ...ad, target_url: 'https://a.example', image_url: 'https://img.example/a b.png' }),
    }).join(),
    /^ads:image_url: image_url must be an https URL with no spaces or backslashes/,
  );
  // The spaces around a cell are not part of it; an international host is a host.
  assert.deepEqual(urlIssues(' https://bücher.example/a '), []);
});

test('two ad groups of a campaign named alike but for case are refused, as the platform refuses them', () => {
  const group = (campaign: string, name: string) => ({ campaign, name, bid: '0.3', countries: 'US' });
  const twoCampaigns = rows(
    { name: 'Spring Sale', objective: 'clicks', budget: '5', budget_type: 'daily' },
    { name: 'Autumn Sale', objective: 'clicks', budget: '5', budget_type: 'daily' },
  );
  assert.deepEqual(
    issuesOf({
      adgroups: rows(
        group('Spring Sale', 'Plants'),
        group('Spring Sale', 'plants'),
        group('Spring Sale', 'PLANTS '),
      ),
      ads: [],
    }),
    [
      'adgroups:name: name "plants" differs only in case from "Plants" (row 2), another ad group of the campaign "Spring Sale": the platform refuses ad group names that differ only in case within a campaign',
      'adgroups:name: name "PLANTS" differs only in case from "Plants" (row 2), another ad group of the campaign "Spring Sale": the platform refuses ad group names that differ only in case within a campaign',
    ],
  );
  // In two campaigns they are two ad groups, each its ads' own.
  const { plan, issues } = compileBulkJob(
    workbook({
      campaigns: twoCampaigns,
      adgroups: rows(group('Spring Sale', 'Plants'), group('Autumn Sale', 'plants')),
      ads: rows({
        ad_group: 'plants',
        name: 'Ad one',
        title: 'Two for one',
        target_url: 'https://shop.example.com/a',
      }),
    }),
    usd,
    flags,
  );
  assert.deepEqual(issues, []);
  assert.equal(plan.adGroupCount, 2);
  assert.equal(plan.body.operations.at(-1)?.body.ad_group_id, 'ref:g2');
});

test('a name that is a number is its text: two of them are duplicates, and a row refers to it by its text', () => {
  const campaign = (name: unknown, objective: string) => ({
    name,
    objective,
    budget: '5',
    budget_type: 'daily',
  });
  assert.deepEqual(
    issuesOf({
      campaigns: rows(campaign(12345, 'clicks'), campaign(12345, 'impressions')),
      adgroups: rows({ campaign: '12345', name: 'Plants', bid: '0.3', countries: 'US' }),
      ads: [],
    }),
    ['campaigns:name: name "12345" is used by row 2 too'],
  );
  assert.deepEqual(
    issuesOf({
      campaigns: rows(campaign('Spring Sale', 'clicks')),
      adgroups: rows(
        { campaign: 'Spring Sale', name: 2026, bid: '0.3', countries: 'US' },
        { campaign: 'Spring Sale', name: '2026', bid: '0.3', countries: 'US' },
      ),
      ads: [],
    }),
    ['adgroups:name: name "2026" is used by row 2 too'],
  );
  const { plan, issues } = compileBulkJob(
    workbook({
      campaigns: rows(campaign(12345, 'impressions')),
      adgroups: rows({ campaign: '12345', name: 2026, bid: '0.3', countries: 'US' }),
      ads: rows({
        ad_group: 2026,
        name: 'Ad one',
        title: 'Two for one',
        target_url: 'https://shop.example.com/a',
      }),
    }),
    usd,
    flags,
  );
  assert.deepEqual(issues, []);
  assert.equal(plan.body.operations[0]?.body.name, '12345');
  assert.equal(plan.body.operations[1]?.body.name, '2026');
});

test('JSON rows are matched to columns as headers are, and two keys of one column are refused', () => {
  assert.deepEqual(jsonRows('campaigns', [{ Name: 'Spring Sale', 'Budget type': 'daily' }]), [
    { row: 1, cells: { name: 'Spring Sale', budget_type: 'daily' } },
  ]);
  assert.throws(
    () =>
      jsonRows('ads', [
        { title: 'One' },
        { Title: 'Two', ' title ': 'Three', target_url: 'https://shop.example.com' },
      ]),
    (e: unknown) =>
      e instanceof InvalidArgumentError &&
      e.message ===
        'ads row 2: the keys "Title" and " title " are both the column "title" (columns are matched without ' +
          'regard to case, spaces and hyphens); give it once',
  );
});
