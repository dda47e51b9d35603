import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { KINDS, type Kind, validData, variant } from '@adsmcp/testkit/marketing-items';
import { validate } from '../schema.ts';
import { marketingTools } from './marketing-tools.ts';

// The shapes of a marketing item's data are checked here, at the edge, and nowhere else: each
// bound of each kind's shape is refused with the path of the value that breaks it.

const saveTool = marketingTools.find((t) => t.name === 'ads_save_marketing_item');
if (saveTool === undefined) throw new Error('ads_save_marketing_item is not in the catalogue');
const issuesOf = (kind: string, data: unknown) => validate(saveTool.input, { kind, name: 'An item', data });

/**
 * Asserts that `data` is refused as the data of a `kind` item with one issue: `expected` is
 * its message with the path it starts with unquoted ("data.voice must be ...").
 */
function assertRefused(kind: Kind, data: unknown, expected: string): void {
  const path = expected.split(' ')[0] ?? '';
  const issues = issuesOf(kind, data);
  assert.deepEqual(
    issues.map((i) => `${i.path}: ${i.message}`),
    [`${path}: \`${path}\`${expected.slice(path.length)}`],
  );
}

const accepted = (kind: Kind, data: unknown) => assert.deepEqual(issuesOf(kind, data), [], kind);

const long = (n: number) => 'x'.repeat(n);
const without = (o: Record<string, unknown>, key: string) => {
  const copy = { ...o };
  delete copy[key];
  return copy;
};
const withField = (kind: Kind, key: string, value: unknown) => ({ ...validData(kind), [key]: value });

test('a valid data object of each kind is accepted as it is', () => {
  for (const kind of KINDS) accepted(kind, validData(kind));
});

test('optional fields may be left out of every shape', () => {
  const minimal: Record<Kind, Record<string, unknown>> = {
    brand: without(validData('brand'), 'website'),
    brief: without(validData('brief'), 'reference_ids'),
    playbook: without(validData('playbook'), 'source_url'),
    inspiration: without(without(validData('inspiration'), 'industry'), 'hook'),
    batch: { variants: [variant(1)] },
    creative: without(without(validData('creative'), 'brief_id'), 'notes'),
  };
  for (const kind of KINDS) accepted(kind, minimal[kind]);
});

test('lengths count characters, not UTF-16 units', () => {
  const data = { variants: [{ ...variant(1), title: '🌱🌱🌱' }] };
  accepted('batch', data);
  assertRefused(
    'batch',
    { variants: [{ ...variant(1), title: '🌱🌱' }] },
    'data.variants[0].title must be 3 to 50 characters (got 2)',
  );
});

describe('voice profile (brand)', () => {
  const cases: [string, unknown, string][] = [
    [
      'voice too long',
      withField('brand', 'voice', long(5001)),
      'data.voice must be at most 5000 characters (got 5001)',
    ],
    ['audience missing', without(validData('brand'), 'audience'), 'data.audience is required'],
    [
      'approved_claims not text',
      withField('brand', 'approved_claims', ['a']),
      'data.approved_claims must be a string (got array)',
    ],
    [
      'restrictions too long',
      withField('brand', 'restrictions', long(5001)),
      'data.restrictions must be at most 5000 characters (got 5001)',
    ],
    [
      'website not https',
      withField('brand', 'website', 'http://shop.example'),
      'data.website must be an https URL (got "http://shop.example")',
    ],
    [
      'website too long',
      withField('brand', 'website', `https://shop.example/${long(2028)}`),
      'data.website must be at most 2048 characters (got 2049)',
    ],
  ];
  for (const [rule, data, message] of cases)
    test(`refuses ${rule}`, () => assertRefused('brand', data, message));
});

describe('brief', () => {
  const cases: [string, unknown, string][] = [
    [
      'product too long',
      withField('brief', 'product', long(5001)),
      'data.product must be at most 5000 characters (got 5001)',
    ],
    [
      'audience too long',
      withField('brief', 'audience', long(5001)),
      'data.audience must be at most 5000 characters (got 5001)',
    ],
    ['offer missing', without(validData('brief'), 'offer'), 'data.offer is required'],
    ['objective null', withField('brief', 'objective', null), 'data.objective must be a string (got null)'],
    [
      'landing_page not a URL',
      withField('brief', 'landing_page', 'shop.example'),
      'data.landing_page must be an https URL (got "shop.example")',
    ],
    [
      'constraints too long',
      withField('brief', 'constraints', long(5001)),
      'data.constraints must be at most 5000 characters (got 5001)',
    ],
    [
      'more than 50 reference_ids',
      withField(
        'brief',
        'reference_ids',
        Array.from({ length: 51 }, () => randomUUID()),
      ),
      'data.reference_ids must have at most 50 items (got 51)',
    ],
    [
      'a reference id listed twice',
      withField('brief', 'reference_ids', [
        '0b0e4b6a-6a0e-4d8e-9c61-3c1f0f7b8a11',
        randomUUID(),
        '0b0e4b6a-6a0e-4d8e-9c61-3c1f0f7b8a11',
      ]),
      'data.reference_ids[2] repeats an earlier item; items must be unique',
    ],
    [
      'a reference id that is not a UUID',
      withField('brief', 'reference_ids', [randomUUID(), 'brief-7']),
      'data.reference_ids[1] must be a UUID (got "brief-7")',
    ],
  ];
  for (const [rule, data, message] of cases)
    test(`refuses ${rule}`, () => assertRefused('brief', data, message));
});

describe('guidance (playbook)', () => {
  const cases: [string, unknown, string][] = [
    [
      'empty guidance',
      withField('playbook', 'guidance', ''),
      'data.guidance must be 1 to 20000 characters (got 0)',
    ],
    [
      'guidance too long',
      withField('playbook', 'guidance', long(20001)),
      'data.guidance must be 1 to 20000 characters (got 20001)',
    ],
    [
      'unknown evidence',
      withField('playbook', 'evidence', 'gut_feeling'),
      'data.evidence must be one of general_guidance, account_results, hypothesis (got "gut_feeling")',
    ],
    ['evidence missing', without(validData('playbook'), 'evidence'), 'data.evidence is required'],
    [
      'source_url not https',
      withField('playbook', 'source_url', 'ftp://wiki.example/x'),
      'data.source_url must be an https URL (got "ftp://wiki.example/x")',
    ],
  ];
  for (const [rule, data, message] of cases)
    test(`refuses ${rule}`, () => assertRefused('playbook', data, message));
});

describe('observed example (inspiration)', () => {
  const cases: [string, unknown, string][] = [
    ['empty brand', withField('inspiration', 'brand', ''), 'data.brand must be 1 to 200 characters (got 0)'],
    [
      'brand too long',
      withField('inspiration', 'brand', long(201)),
      'data.brand must be 1 to 200 characters (got 201)',
    ],
    ['source_url missing', without(validData('inspiration'), 'source_url'), 'data.source_url is required'],
    [
      'observed_at without a time',
      withField('inspiration', 'observed_at', '2026-03-01'),
      'data.observed_at must be a date-time (RFC 3339, with a time zone) (got "2026-03-01")',
    ],
    [
      'observed_at on a day that does not exist',
      withField('inspiration', 'observed_at', '2026-02-30T10:00:00Z'),
      'data.observed_at must be a date-time (RFC 3339, with a time zone): 2026-02-30 is not a day of the calendar (got "2026-02-30T10:00:00Z")',
    ],
    [
      'observed_at at hour 24',
      withField('inspiration', 'observed_at', '2026-10-12T24:00:00Z'),
      'data.observed_at must be a date-time (RFC 3339, with a time zone): hours run 00 to 23 (for midnight at the end of a day, write 00:00 of the next day) (got "2026-10-12T24:00:00Z")',
    ],
    [
      'unknown status',
      withField('inspiration', 'status', 'gone'),
      'data.status must be one of observed, no_longer_observed (got "gone")',
    ],
    [
      'copy too long',
      withField('inspiration', 'copy', long(5001)),
      'data.copy must be at most 5000 characters (got 5001)',
    ],
    [
      'industry too long',
      withField('inspiration', 'industry', long(201)),
      'data.industry must be at most 200 characters (got 201)',
    ],
    [
      'format too long',
      withField('inspiration', 'format', long(101)),
      'data.format must be at most 100 characters (got 101)',
    ],
    [
      'hook too long',
      withField('inspiration', 'hook', long(501)),
      'data.hook must be at most 500 characters (got 501)',
    ],
    [
      'offer too long',
      withField('inspiration', 'offer', long(501)),
      'data.offer must be at most 500 characters (got 501)',
    ],
    [
      'notes too long',
      withField('inspiration', 'notes', long(5001)),
      'data.notes must be at most 5000 characters (got 5001)',
    ],
  ];
  for (const [rule, data, message] of cases)
    test(`refuses ${rule}`, () => assertRefused('inspiration', data, message));
});

describe('batch', () => {
  const withVariant = (i: number, v: Record<string, unknown>) => ({
    variants: Array.from({ length: i + 1 }, (_, n) => (n === i ? v : variant(n))),
  });
  const cases: [string, unknown, string][] = [
    ['no variants', { variants: [] }, 'data.variants must have 1 to 100 items (got 0)'],
    [
      'more than 100 variants',
      { variants: Array.from({ length: 101 }, (_, n) => variant(n)) },
      'data.variants must have 1 to 100 items (got 101)',
    ],
    ['variants missing', { brief_id: randomUUID() }, 'data.variants is required'],
    [
      'a title too short',
      withVariant(3, { ...variant(3), title: 'ab' }),
      'data.variants[3].title must be 3 to 50 characters (got 2)',
    ],
    [
      'a title of white space only',
      withVariant(2, { ...variant(2), title: '   ' }),
      'data.variants[2].title must contain a visible character, not only white space',
    ],
    [
      'a title of blank characters only',
      withVariant(0, { ...variant(0), title: '\u3000\u3000\u3000' }),
      'data.variants[0].title must contain a visible character, not only white space',
    ],
    [
      'a title too long',
      withVariant(0, { ...variant(0), title: long(51) }),
      'data.variants[0].title must be 3 to 50 characters (got 51)',
    ],
    [
      'a body too long',
      withVariant(1, { ...variant(1), body: long(101) }),
      'data.variants[1].body must be at most 100 characters (got 101)',
    ],
    [
      'a target_url not https',
      withVariant(0, { ...variant(0), target_url: 'http://shop.example' }),
      'data.variants[0].target_url must be an https URL (got "http://shop.example")',
    ],
    [
      'a source_image_url missing',
      withVariant(0, without(variant(0), 'source_image_url')),
      'data.variants[0].source_image_url is required',
    ],
    [
      'a hook too long',
      withVariant(0, { ...variant(0), hook: long(201) }),
      'data.variants[0].hook must be at most 200 characters (got 201)',
    ],
    [
      'an offer too long',
      withVariant(0, { ...variant(0), offer: long(201) }),
      'data.variants[0].offer must be at most 200 characters (got 201)',
    ],
    [
      'a variant that is not an object',
      { variants: ['Buy now'] },
      'data.variants[0] must be an object (got string)',
    ],
    [
      'a brief_id that is not a UUID',
      { variants: [variant(0)], brief_id: 'b1' },
      'data.brief_id must be a UUID (got "b1")',
    ],
  ];
  for (const [rule, data, message] of cases)
    test(`refuses ${rule}`, () => assertRefused('batch', data, message));
  test('a variant may have no body text, as an ad may', () => {
    accepted('batch', withVariant(0, { ...variant(0), body: '' }));
    accepted('batch', withVariant(0, { ...variant(0), body: '  ' }));
  });
});

describe('creative label (creative)', () => {
  const cases: [string, unknown, string][] = [
    [
      'an account_id that is not a UUID',
      withField('creative', 'account_id', 'acct_1'),
      'data.account_id must be a UUID (got "acct_1")',
    ],
    ['an empty ad_id', withField('creative', 'ad_id', ''), 'data.ad_id must be 1 to 255 characters (got 0)'],
    [
      'an ad_id of white space only, which names no ad',
      withField('creative', 'ad_id', '  '),
      'data.ad_id must contain a visible character, not only white space',
    ],
    [
      'an ad_id too long',
      withField('creative', 'ad_id', long(256)),
      'data.ad_id must be 1 to 255 characters (got 256)',
    ],
    ['hook missing', without(validData('creative'), 'hook'), 'data.hook is required'],
    [
      'hook too long',
      withField('creative', 'hook', long(201)),
      'data.hook must be at most 200 characters (got 201)',
    ],
    [
      'offer too long',
      withField('creative', 'offer', long(201)),
      'data.offer must be at most 200 characters (got 201)',
    ],
    [
      'a brief_id that is not a UUID',
      withField('creative', 'brief_id', 'brief'),
      'data.brief_id must be a UUID (got "brief")',
    ],
    [
      'notes too long',
      withField('creative', 'notes', long(5001)),
      'data.notes must be at most 5000 characters (got 5001)',
    ],
  ];
  for (const [rule, data, message] of cases)
    test(`refuses ${rule}`, () => assertRefused('creative', data, message));
});

test('an unknown property is refused, naming it and the allowed ones', () => {
  assert.deepEqual(issuesOf('brand', withField('brand', 'colour', 'green')), [
    {
      path: 'data.colour',
      message:
        'unknown property of `data` `colour`; allowed: voice, audience, approved_claims, restrictions, website',
    },
  ]);
  assert.deepEqual(issuesOf('batch', { variants: [{ ...variant(0), cta: 'Buy' }] }), [
    {
      path: 'data.variants[0].cta',
      message:
        'unknown property of `data.variants[0]` `cta`; allowed: title, body, target_url, source_image_url, hook, offer',
    },
  ]);
});

test('data of another kind’s shape is refused, naming the kind whose shape it has', () => {
  assert.deepEqual(issuesOf('brief', validData('brand')), [
    {
      path: 'data',
      message:
        '`data` has the shape for `kind` "brand", but `kind` is "brief"; change `kind` or send `data` of the shape for "brief"',
    },
  ]);
});

test('data that is not an object is refused', () => {
  assertRefused('playbook', [validData('playbook')], 'data must be an object (got array)');
});

test('every broken rule is reported', () => {
  assert.deepEqual(
    issuesOf('playbook', { guidance: '', evidence: 'x', extra: 1 }).map((i) => i.path),
    ['data.extra', 'data.guidance', 'data.evidence'],
  );
});

describe('the fields of a save and of a list', () => {
  const listTool = marketingTools.find((t) => t.name === 'ads_list_marketing_items');
  if (listTool === undefined) throw new Error('ads_list_marketing_items is not in the catalogue');
  const brand = { kind: 'brand', name: 'Voice', data: validData('brand') };
  const cases: [string, Record<string, unknown>, string][] = [
    ['an empty name', { ...brand, name: '' }, '`name` must be 1 to 200 characters (got 0)'],
    ['a name too long', { ...brand, name: 'n'.repeat(201) }, '`name` must be 1 to 200 characters (got 201)'],
    [
      'an unknown kind',
      { ...brand, kind: 'memo' },
      '`kind` must be one of brand, brief, playbook, inspiration, batch, creative (got "memo")',
    ],
    [
      'a collection too long',
      { ...brand, collection: 'c'.repeat(201) },
      '`collection` must be at most 200 characters (got 201)',
    ],
    [
      'more than 30 tags',
      { ...brand, tags: Array.from({ length: 31 }, (_, i) => `t${i}`) },
      '`tags` must have at most 30 items (got 31)',
    ],
    ['an empty tag', { ...brand, tags: ['ok', ''] }, '`tags[1]` must be 1 to 100 characters (got 0)'],
    [
      'a name of spaces only',
      { ...brand, name: '   ' },
      '`name` must contain a visible character, not only white space',
    ],
    [
      'a tag of spaces only',
      { ...brand, tags: ['ok', '   '] },
      '`tags[1]` must contain a visible character, not only white space',
    ],
    [
      'a tag too long',
      { ...brand, tags: ['t'.repeat(101)] },
      '`tags[0]` must be 1 to 100 characters (got 101)',
    ],
    [
      'a repeated tag',
      { ...brand, tags: ['spring', 'sale', 'spring'] },
      '`tags[2]` repeats an earlier item; items must be unique',
    ],
    ['an item_id that is not a UUID', { ...brand, item_id: 'item-1' }, '`item_id` must be a UUID'],
    [
      'an expected_revision of 0',
      { ...brand, item_id: randomUUID(), expected_revision: 0 },
      '`expected_revision` must be an integer from 1 to 2147483647 (got 0)',
    ],
  ];
  for (const [what, args, message] of cases) {
    test(`a save with ${what} is refused`, () => {
      const issues = validate(saveTool.input, args).map((i) => i.message);
      assert.equal(issues.length, 1, JSON.stringify(issues));
      assert.ok(issues[0]?.startsWith(message), issues[0]);
    });
  }

  const listCases: [Record<string, unknown>, string][] = [
    [{ limit: 0 }, '`limit` must be an integer from 1 to 100 (got 0)'],
    [{ limit: 101 }, '`limit` must be an integer from 1 to 100 (got 101)'],
    [{ offset: -1 }, '`offset` must be an integer from 0 to 100000 (got -1)'],
    [{ offset: 100_001 }, '`offset` must be an integer from 0 to 100000 (got 100001)'],
    [
      { kind: 'memo' },
      '`kind` must be one of brand, brief, playbook, inspiration, batch, creative (got "memo")',
    ],
    [{ query: 'q'.repeat(201) }, '`query` must be at most 200 characters (got 201)'],
    [{ collection: 'c'.repeat(201) }, '`collection` must be at most 200 characters (got 201)'],
    [{ tag: 't'.repeat(101) }, '`tag` must be at most 100 characters (got 101)'],
  ];
  test('a list refuses filters and pages out of bounds, naming each', () => {
    for (const [args, message] of listCases) {
      assert.deepEqual(
        validate(listTool.input, args).map((i) => i.message),
        [message],
      );
    }
  });
});
