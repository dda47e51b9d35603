import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { KINDS, type Kind, validateItemData } from '../src/domain/item-data.ts';
import { validData, variant } from './fixtures.ts';

/** Asserts that `data` is refused as the data of a `kind` item with exactly `message`. */
function assertRefused(kind: Kind, data: unknown, message: string): void {
  assert.throws(
    () => validateItemData(kind, data),
    (err: unknown) => {
      assert.ok(err instanceof InvalidArgumentError, String(err));
      assert.equal(err.message, message);
      return true;
    },
  );
}

const long = (n: number) => 'x'.repeat(n);
const without = (o: Record<string, unknown>, key: string) => {
  const copy = { ...o };
  delete copy[key];
  return copy;
};
const withField = (kind: Kind, key: string, value: unknown) => ({ ...validData(kind), [key]: value });

test('a valid data object of each kind is accepted as it is', () => {
  for (const kind of KINDS) assert.deepEqual(validateItemData(kind, validData(kind)), validData(kind), kind);
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
  for (const kind of KINDS) assert.deepEqual(validateItemData(kind, minimal[kind]), minimal[kind], kind);
});

test('lengths count characters, not UTF-16 units', () => {
  const data = { variants: [{ ...variant(1), title: '🌱🌱🌱' }] };
  assert.deepEqual(validateItemData('batch', data), data);
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
      'data.observed_at must be a date-time (RFC 3339, with a time zone) (got "2026-02-30T10:00:00Z")',
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
      'an unknown variant property',
      withVariant(0, { ...variant(0), cta: 'Buy' }),
      'data.variants[0].cta is not a property of a batch variant; allowed: title, body, target_url, source_image_url, hook, offer',
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
  assertRefused(
    'brand',
    withField('brand', 'colour', 'green'),
    'data.colour is not a property of a voice profile; allowed: voice, audience, approved_claims, restrictions, website',
  );
});

test('data of another kind’s shape is refused, naming the shape it has and the one the kind needs', () => {
  assertRefused(
    'brief',
    validData('brand'),
    'data is a voice profile (the data of a brand item), but kind is brief, whose data is a brief with product, ' +
      'audience, offer, objective, landing_page, constraints; set kind to brand or send a brief',
  );
});

test('data that is not an object is refused', () => {
  assertRefused('playbook', [validData('playbook')], 'data must be an object (got array)');
});

test('every broken rule is reported in one message', () => {
  assertRefused(
    'playbook',
    { guidance: '', evidence: 'x', extra: 1 },
    'data.extra is not a property of a guidance; allowed: guidance, evidence, source_url; ' +
      'data.guidance must be 1 to 20000 characters (got 0); ' +
      'data.evidence must be one of general_guidance, account_results, hypothesis (got "x")',
  );
});

test('a long list of problems is cut to the first ten', () => {
  const variants = Array.from({ length: 12 }, (_, n) => ({ ...variant(n), title: 'a' }));
  assert.throws(
    () => validateItemData('batch', { variants }),
    (err: unknown) => {
      assert.ok(err instanceof InvalidArgumentError);
      assert.match(err.message, /^data\.variants\[0\]\.title must be 3 to 50 characters \(got 1\);/);
      assert.match(err.message, /data\.variants\[9\]\.title .*; and 2 more$/);
      return true;
    },
  );
});
