/**
 * Literal ad variations: the combination rules (domain/variations.ts), and VariationService over
 * real Connect, whose refusals name the argument and the rule as the tool's do, whoever calls.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { VariationService } from '@adsmcp/proto/marketing/v1/variations_pb';
import { refusalDetailsOf } from '@adsmcp/runtime/platform-read/refusal';
import { Code, ConnectError } from '@connectrpc/connect';
import { buildVariations, TooManyVariationsError } from '../src/domain/variations.ts';
import { principal, type RunningService, startService } from './service.ts';

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
        assert.ok(err instanceof TooManyVariationsError);
        assert.equal(err.kind, 'invalid_argument');
        assert.equal(err.combinations, 101);
        assert.match(err.message, /would make 101 combinations \(101 × 1 × 1 × 1\); the limit is 100/);
        return true;
      },
    );
  });
});

describe('VariationService', () => {
  let svc: RunningService;

  before(async () => {
    svc = await startService();
  });

  after(async () => {
    await svc?.stop();
  });

  const request = (over: Partial<Record<keyof typeof parts, string[]>> = {}) => {
    const p = { ...parts, ...over };
    return { titles: p.titles, bodies: p.bodies, imageUrls: p.image_urls, targetUrls: p.target_urls };
  };
  const build = (over: Partial<Record<keyof typeof parts, string[]>> = {}) =>
    svc.clientOf(VariationService).buildVariations(request(over), svc.as(principal()));

  async function refusal(call: Promise<unknown>): Promise<string> {
    const err = await call.then(
      () => assert.fail('the call was not refused'),
      (e: unknown) => ConnectError.from(e),
    );
    assert.equal(Code[err.code], Code[Code.InvalidArgument], err.rawMessage);
    return err.rawMessage;
  }

  test('answers the combinations in order, with their count', async () => {
    const res = await build();
    assert.equal(res.count, 8);
    assert.deepEqual(
      res.variations.slice(0, 2).map((v) => [v.title, v.body, v.sourceImageUrl, v.targetUrl]),
      [
        ['Two for one', 'Every plant.', 'https://cdn.example/a.png', 'https://shop.example/a'],
        ['Two for one', 'Every plant.', 'https://cdn.example/a.png', 'https://shop.example/b'],
      ],
    );
  });

  test('lists and lengths out of their bounds are refused, naming each field and its rule', async () => {
    assert.equal(
      await refusal(build({ titles: ['Hi'], bodies: [], image_urls: Array(21).fill('https://i.example/x') })),
      '`titles[0]` must be 3 to 50 characters (got 2); `bodies` must have 1 to 100 items (got 0); ' +
        '`image_urls` must have 1 to 20 items (got 21)',
    );
    assert.equal(
      await refusal(build({ titles: Array.from({ length: 101 }, (_, n) => `Spring title ${n}`) })),
      '`titles` must have 1 to 100 items (got 101)',
    );
  });

  test('hidden characters, blank titles and URLs that are not https are refused by name', async () => {
    assert.equal(
      await refusal(build({ titles: ['Sale\u200bnow', '   '] })),
      '`titles[0]` must not contain the invisible character U+200B: control, format and ' +
        'blank characters hide or change what the text shows; `titles[1]` must contain a visible character, ' +
        'not only white space',
    );
    assert.equal(
      await refusal(build({ image_urls: ['http://cdn.example/a.png'], target_urls: ['not a url'] })),
      '`image_urls[0]` must be an https URL (got "http://cdn.example/a.png"); ' +
        '`target_urls[0]` must be an https URL with no spaces or backslashes (got "not a url")',
    );
  });

  test('more than 100 combinations is refused, saying how many there would be, also as details', async () => {
    const titles = Array.from({ length: 51 }, (_, n) => `Spring title ${n}`);
    const err = await build({ titles, bodies: ['B'] }).then(
      () => assert.fail('the call was not refused'),
      (e: unknown) => ConnectError.from(e),
    );
    assert.equal(Code[err.code], Code[Code.InvalidArgument]);
    assert.equal(
      err.rawMessage,
      'titles × bodies × image_urls × target_urls would make 102 combinations (51 × 1 × 1 × 2); the limit is 100',
    );
    // The tool error shows them beside its message, as it did when the gateway combined the parts.
    assert.deepEqual(refusalDetailsOf(err), { combinations: 102, limit: 100 });
  });
});
