import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { validate } from '../schema.ts';
import { listOptimizers, saveOptimizer } from './optimizer-tools.ts';

// The bounds of an optimizer's configuration are checked here, at the edge, and nowhere else:
// each is refused with a message naming the argument and the rule.

const validConfig = (): Record<string, unknown> => ({
  campaign_ids: ['c-1', 'c-2'],
  goal: 'cpa',
  cadence_hours: 24,
  window_hours: 168,
  reporting_delay_hours: 48,
  min_impressions: 1000,
  min_clicks: 50,
  min_conversions: 5,
  max_ads_per_campaign: 3,
  review_hours: 24,
  publish_hours: 4,
  allowed_domains: ['example.com', 'shop.example.com'],
});

const save = (patch: Record<string, unknown> = {}, config: Record<string, unknown> = {}) => ({
  account_id: '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90',
  name: 'Weekly copy review',
  config: { ...validConfig(), ...config },
  enabled: true,
  ...patch,
});

const messagesOf = (args: unknown) => validate(saveOptimizer.input, args).map((i) => i.message);

/** Asserts that a save with `config` patched is refused with one message starting `message`. */
function refusesConfig(config: Record<string, unknown>, message: string): void {
  const messages = messagesOf(save({}, config));
  assert.equal(messages.length, 1, JSON.stringify(messages));
  assert.ok(messages[0]?.startsWith(message), messages[0]);
}

const accepts = (config: Record<string, unknown>) => assert.deepEqual(messagesOf(save({}, config)), []);

describe('optimizer configuration bounds', () => {
  test('a configuration within every bound is accepted, with or without its optional fields', () => {
    accepts({});
    accepts({ conversion_goal_id: 'purchase', target: 12.5, brand_instructions: 'Plain words.' });
  });

  test('campaign_ids has 1 to 20 unique ids of 1 to 255 characters', () => {
    refusesConfig({ campaign_ids: [] }, '`config.campaign_ids` must have 1 to 20 items (got 0)');
    const twentyOne = Array.from({ length: 21 }, (_, i) => `c-${i}`);
    refusesConfig({ campaign_ids: twentyOne }, '`config.campaign_ids` must have 1 to 20 items (got 21)');
    accepts({ campaign_ids: twentyOne.slice(0, 20) });
    refusesConfig({ campaign_ids: ['a', 'b', 'a'] }, '`config.campaign_ids[2]` repeats an earlier item');
    refusesConfig(
      { campaign_ids: ['ok', ''] },
      '`config.campaign_ids[1]` must be 1 to 255 characters (got 0)',
    );
    refusesConfig(
      { campaign_ids: ['x'.repeat(256)] },
      '`config.campaign_ids[0]` must be 1 to 255 characters',
    );
  });

  test('goal is cpc, cpa or ctr', () => {
    refusesConfig({ goal: 'roas' }, '`config.goal` must be one of cpc, cpa, ctr (got "roas")');
  });

  test('conversion_goal_id is 1 to 255 characters; target is greater than 0 and at most 1000000', () => {
    refusesConfig({ conversion_goal_id: '' }, '`config.conversion_goal_id` must be 1 to 255 characters');
    refusesConfig({ conversion_goal_id: 'g'.repeat(256) }, '`config.conversion_goal_id` must be 1 to 255');
    for (const target of [0, -1, 1_000_000.5]) {
      refusesConfig({ target }, '`config.target` must be a number greater than 0 and at most 1000000');
    }
    accepts({ target: 1_000_000 });
  });

  const integerBounds: [string, number, number][] = [
    ['cadence_hours', 6, 720],
    ['window_hours', 24, 744],
    ['reporting_delay_hours', 24, 168],
    ['min_impressions', 1, 10_000_000],
    ['min_clicks', 1, 1_000_000],
    ['min_conversions', 1, 1_000_000],
    ['max_ads_per_campaign', 1, 5],
    ['review_hours', 1, 72],
    ['publish_hours', 1, 24],
  ];
  for (const [field, min, max] of integerBounds) {
    test(`${field} is an integer from ${min} to ${max}`, () => {
      const rule = `\`config.${field}\` must be an integer from ${min} to ${max}`;
      refusesConfig({ [field]: min - 1 }, rule);
      refusesConfig({ [field]: max + 1 }, rule);
      refusesConfig({ [field]: min + 0.5 }, rule);
      accepts({ [field]: min });
      accepts({ [field]: max });
    });
  }

  test('brand_instructions is at most 12000 characters, counted as code points', () => {
    refusesConfig(
      { brand_instructions: 'b'.repeat(12_001) },
      '`config.brand_instructions` must be at most 12000 characters (got 12001)',
    );
    accepts({ brand_instructions: '😀'.repeat(12_000) });
  });

  test('allowed_domains has 1 to 30 unique bare lowercase hostnames of at most 253 characters', () => {
    refusesConfig({ allowed_domains: [] }, '`config.allowed_domains` must have 1 to 30 items (got 0)');
    const many = Array.from({ length: 31 }, (_, i) => `d${i}.example.com`);
    refusesConfig({ allowed_domains: many }, '`config.allowed_domains` must have 1 to 30 items (got 31)');
    refusesConfig(
      { allowed_domains: ['a.com', 'a.com'] },
      '`config.allowed_domains[1]` repeats an earlier item',
    );
    const label = 'a'.repeat(63);
    const long = [label, label, label, 'a'.repeat(62)].join('.'); // 254
    refusesConfig({ allowed_domains: [long] }, '`config.allowed_domains[0]` must be 1 to 253 characters');
    for (const domain of [
      'https://x.com',
      'x.com/path',
      'x.com:443',
      'Example.com',
      '-x.com',
      'x..com',
      '*.x.com',
    ]) {
      refusesConfig(
        { allowed_domains: ['ok.com', domain] },
        '`config.allowed_domains[1]` must be a hostname such as example.com',
      );
    }
    accepts({ allowed_domains: ['x.com', 'shop-1.example.co.uk', 'xn--bcher-kva.example', 'localhost'] });
  });
});

describe('save and list arguments', () => {
  test('name is 1 to 200 characters and expected_revision an integer from 1 to 1000000', () => {
    assert.deepEqual(messagesOf(save({ name: 'n'.repeat(201) })), [
      '`name` must be 1 to 200 characters (got 201)',
    ]);
    for (const expected_revision of [0, 1_000_001, 1.5]) {
      const messages = messagesOf(
        save({ optimizer_id: '8d1e6f3a-2c4b-4e7a-b9d0-5f3c1a7e2b64', expected_revision }),
      );
      assert.deepEqual(messages, [
        `\`expected_revision\` must be an integer from 1 to 1000000 (got ${expected_revision})`,
      ]);
    }
  });

  test('a list page is a limit from 1 to 100 and an offset from 0 to 100000', () => {
    const messages = (args: unknown) => validate(listOptimizers.input, args).map((i) => i.message);
    assert.deepEqual(messages({ limit: 0 }), ['`limit` must be an integer from 1 to 100 (got 0)']);
    assert.deepEqual(messages({ limit: 101 }), ['`limit` must be an integer from 1 to 100 (got 101)']);
    assert.deepEqual(messages({ offset: -1 }), ['`offset` must be an integer from 0 to 100000 (got -1)']);
    assert.deepEqual(messages({ offset: 100_001 }), [
      '`offset` must be an integer from 0 to 100000 (got 100001)',
    ]);
    assert.deepEqual(messages({ limit: 100, offset: 100_000 }), []);
  });
});

test('a configuration read back saves unchanged: its unset optional fields come as null and are taken as unset', () => {
  const issues = validate(
    saveOptimizer.input,
    save({}, { conversion_goal_id: null, target: null, brand_instructions: null }),
  );
  assert.deepEqual(issues, []);
  // A value given is still held to its bounds.
  assert.deepEqual(
    validate(saveOptimizer.input, save({}, { target: 0 })).map((i) => i.path),
    ['config.target'],
  );
});
