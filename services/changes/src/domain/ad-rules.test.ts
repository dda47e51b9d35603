import assert from 'node:assert/strict';
import { test } from 'node:test';
import { creativeReport } from './ad-rules.ts';

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
