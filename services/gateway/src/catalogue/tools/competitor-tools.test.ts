import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validate } from '../schema.ts';
import { competitorTools } from './competitor-tools.ts';

const save = competitorTools.find((t) => t.name === 'ads_save_competitor_source');

test('a competitor source needs a name with a visible character, as every other saved name does', () => {
  assert.ok(save);
  const args = {
    account_id: '0b0e4b6a-6a0e-4d8e-9c61-3c1f0f7b8a11',
    url: 'https://rival.example/offers',
    interval_hours: 24,
    enabled: false,
  };
  const messages = (name: string) => validate(save.input, { ...args, name }).map((i) => i.message);
  assert.deepEqual(messages('Rival offers'), []);
  assert.deepEqual(messages('   '), ['`name` must contain a visible character, not only white space']);
});
