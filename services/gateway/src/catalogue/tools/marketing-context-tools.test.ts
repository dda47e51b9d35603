import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { validate } from '../schema.ts';
import { buildVariationsTool } from './marketing-context-tools.ts';

const issuesOf = (args: Record<string, unknown>) => validate(buildVariationsTool.input, args);

const parts = {
  titles: ['Two for one', 'Spring plants'],
  bodies: ['Every plant.', 'This week only.'],
  image_urls: ['https://cdn.example/a.png'],
  target_urls: ['https://shop.example/a', 'https://shop.example/b'],
};

describe('the variations schema', () => {
  test('the example is valid', () => {
    assert.deepEqual(issuesOf(buildVariationsTool.example), []);
  });

  test('titles keep the creative rules: 3 to 50 visible characters, no hidden characters', () => {
    assert.match(issuesOf({ ...parts, titles: ['Hi'] })[0]?.message ?? '', /titles\[0\]/);
    assert.match(issuesOf({ ...parts, titles: ['x'.repeat(51)] })[0]?.message ?? '', /titles\[0\]/);
    assert.match(
      issuesOf({ ...parts, titles: ['Ok', 'Sale\u200bnow'] })
        .map((i) => i.message)
        .join(' '),
      /invisible/,
    );
    assert.match(issuesOf({ ...parts, titles: ['     '] })[0]?.message ?? '', /visible character/);
  });

  test('each list needs at least one item and keeps its maximum', () => {
    for (const field of ['titles', 'bodies', 'image_urls', 'target_urls']) {
      assert.equal(issuesOf({ ...parts, [field]: [] })[0]?.path, field, field);
    }
    assert.equal(
      issuesOf({ ...parts, image_urls: Array(21).fill('https://i.example/x') })[0]?.path,
      'image_urls',
    );
    assert.equal(issuesOf({ ...parts, bodies: ['x'.repeat(101)] })[0]?.path, 'bodies[0]');
  });

  test('image and target URLs must be https and at most 2048 characters', () => {
    assert.equal(issuesOf({ ...parts, image_urls: ['http://cdn.example/a.png'] })[0]?.path, 'image_urls[0]');
    assert.equal(issuesOf({ ...parts, target_urls: ['not a url'] })[0]?.path, 'target_urls[0]');
    const long = `https://shop.example/${'a'.repeat(2048)}`;
    assert.equal(issuesOf({ ...parts, target_urls: [long] })[0]?.path, 'target_urls[0]');
  });
});
