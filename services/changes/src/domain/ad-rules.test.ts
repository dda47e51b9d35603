import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkCropSquare, creativeReport } from './ad-rules.ts';

const card = {
  type: 'chat_card',
  title: 'Two plants for one',
  body: 'Every plant, this week only.',
  target_url: 'https://shop.example.com/spring',
  file_id: 'file_1',
};

test('a chat_card with an image and good copy is valid', () => {
  assert.deepEqual(creativeReport(card), {
    valid: true,
    copyIssues: [],
    image: { required: true, present: true, issue: '' },
  });
});

test('a chat_card without an image is reported as a missing image, not as bad copy', () => {
  const { file_id: _, ...noImage } = card;
  const report = creativeReport(noImage);
  assert.equal(report.valid, false);
  assert.deepEqual(report.copyIssues, []);
  assert.deepEqual(report.image, {
    required: true,
    present: false,
    issue: '`creative.file_id` is required: a chat_card shows an image, and it has none',
  });
});

test('a product_ad_template needs no image', () => {
  const { file_id: _, ...template } = { ...card, type: 'product_ad_template' };
  assert.deepEqual(creativeReport(template), {
    valid: true,
    copyIssues: [],
    image: { required: false, present: false, issue: '' },
  });
});

test('the ad rules that refuse a prepared ad are copy issues of the creative, with their message', () => {
  const report = creativeReport({
    ...card,
    type: 'product_ad_template',
    image_crop: { x: 0, y: 0, width: 0.5, height: 0.5 },
  });
  assert.equal(report.valid, false);
  assert.deepEqual(report.copyIssues, [
    '`body.creative.image_crop` is only for chat_card creatives, and the ad would have a product_ad_template creative with an image_crop',
  ]);
});

test('a crop is square in pixels of the upright image, not in equal fractions', () => {
  const wide = { width: 300, height: 100, what: 'campaign asset a1' };
  const crop = (width: number, height: number) => ({ ...card, image_crop: { x: 0, y: 0, width, height } });
  const square = (width: number, height: number, image: Parameters<typeof checkCropSquare>[1]) =>
    checkCropSquare(crop(width, height), image, { creative: crop(width, height) });
  // 100 × 100 pixels: a third of the width, all of the height.
  square(1 / 3, 1, wide);
  square(0.3333, 1, wide);
  assert.throws(
    () => square(0.5, 0.5, wide),
    new RegExp(
      'image_crop` must be square in pixels: on campaign asset a1, 300 × 100 pixels upright, it is 150 × 50 pixels; ' +
        'for a square, width × 300 must equal height × 100',
    ),
  );
  // On a square image, square fractions are a square.
  square(0.8, 0.8, { width: 1080, height: 1080, what: 'file f' });
  // A crop the ad keeps, on a new image, is said to be the ad's.
  assert.throws(
    () => checkCropSquare(crop(0.8, 0.8), { width: 100, height: 300, what: 'file f' }, { creative: {} }),
    /is 80 × 240 pixels \(the ad's current image_crop\)/,
  );
});
