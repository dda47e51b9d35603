import assert from 'node:assert/strict';
import { test } from 'node:test';
import { shownUrl } from '../src/shown-url.ts';

test('a receiver URL is shown by its origin alone; its path, query or fragment only as …', () => {
  assert.equal(
    shownUrl('https://hooks.slack.com/services/T000/B000/abcdefSECRET'),
    'https://hooks.slack.com/…',
  );
  assert.equal(shownUrl('https://example.com/?token=abc'), 'https://example.com/…');
  assert.equal(shownUrl('https://example.com/#k'), 'https://example.com/…');
  assert.equal(shownUrl('https://example.com:8443'), 'https://example.com:8443');
  assert.equal(shownUrl('https://user:pw@example.com/'), 'https://example.com');
  assert.equal(shownUrl('not a url'), undefined);
  assert.equal(shownUrl(''), undefined);
});
