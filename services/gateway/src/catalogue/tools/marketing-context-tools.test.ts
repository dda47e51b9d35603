import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ToolFailure } from '../../mcp/tool-failure.ts';
import { validate } from '../schema.ts';
import { buildVariations, buildVariationsTool } from './marketing-context-tools.ts';

const issuesOf = (args: Record<string, unknown>) => validate(buildVariationsTool.input, args);

const parts = {
  titles: ['Two for one', 'Spring plants'],
  bodies: ['Every plant.', 'This week only.'],
  image_urls: ['https://cdn.example/a.png'],
  target_urls: ['https://shop.example/a', 'https://shop.example/b'],
};

describe('building variations', () => {
  test('every title × body × image × target, titles slowest and targets fastest', () => {
    const built = buildVariations(parts);
    assert.equal(built.length, 8);
    assert.deepEqual(
      built.map((v) => [v.title, v.body, v.target_url]),
      [
        ['Two for one', 'Every plant.', 'https://shop.example/a'],
        ['Two for one', 'Every plant.', 'https://shop.example/b'],
        ['Two for one', 'This week only.', 'https://shop.example/a'],
        ['Two for one', 'This week only.', 'https://shop.example/b'],
        ['Spring plants', 'Every plant.', 'https://shop.example/a'],
        ['Spring plants', 'Every plant.', 'https://shop.example/b'],
        ['Spring plants', 'This week only.', 'https://shop.example/a'],
        ['Spring plants', 'This week only.', 'https://shop.example/b'],
      ],
    );
    assert.ok(built.every((v) => v.source_image_url === 'https://cdn.example/a.png'));
  });

  test('the same parts always give the same variations, and the parts are used literally', () => {
    assert.deepEqual(buildVariations(parts), buildVariations(parts));
    const one = buildVariations({
      titles: ['  Odd  '],
      bodies: [''],
      image_urls: ['https://i.example/x'],
      target_urls: ['https://t.example'],
    });
    assert.deepEqual(one, [
      {
        title: '  Odd  ',
        body: '',
        source_image_url: 'https://i.example/x',
        target_url: 'https://t.example',
      },
    ]);
  });

  test('exactly 100 combinations are built', () => {
    const titles = Array.from({ length: 10 }, (_, n) => `Title ${n}`);
    const bodies = Array.from({ length: 10 }, (_, n) => `Body ${n}`);
    assert.equal(
      buildVariations({ ...parts, titles, bodies, target_urls: ['https://t.example'] }).length,
      100,
    );
  });

  test('more than 100 combinations is refused, saying how many there would be and the limit', () => {
    const titles = Array.from({ length: 101 }, (_, n) => `Title ${n}`);
    assert.throws(
      () => buildVariations({ ...parts, titles, bodies: ['B'], target_urls: ['https://t.example'] }),
      (err: unknown) => {
        assert.ok(err instanceof ToolFailure);
        assert.equal(err.code, 'invalid_argument');
        assert.match(err.message, /would make 101 combinations \(101 × 1 × 1 × 1\); the limit is 100/);
        return true;
      },
    );
  });
});

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
