import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nextCursor, nextOffset, pageOf } from '../src/paging.ts';

test('a page asked for without limit or offset is the first 20', () => {
  assert.deepEqual(pageOf({}), { offset: 0, limit: 20 });
  assert.deepEqual(pageOf({ offset: undefined, limit: undefined }), { offset: 0, limit: 20 });
  assert.deepEqual(pageOf({ offset: 40, limit: 5 }), { offset: 40, limit: 5 });
});

test('nextOffset points after the page, and nowhere at the end or past the largest offset', () => {
  assert.equal(nextOffset({ offset: 0 }, 20, 45), 20);
  assert.equal(nextOffset({ offset: 40 }, 5, 45), undefined);
  assert.equal(nextOffset({ offset: 50 }, 0, 45), undefined, 'an empty page past the end');
  assert.equal(nextOffset({ offset: 99_990 }, 20, 200_000), undefined);
  assert.equal(nextOffset({ offset: 99_980 }, 20, 200_000), 100_000);
  assert.equal(nextOffset({ offset: 100_000 }, 100, 200_000), undefined);
});

test('nextCursor follows the platform’s paging.after only while has_more is true', () => {
  assert.equal(nextCursor({ after: 'c2', before: 'c1', has_more: true }), 'c2');
  assert.equal(nextCursor({ after: 'c2', has_more: false }), undefined);
  assert.equal(nextCursor({ after: null, has_more: true }), undefined);
  assert.equal(nextCursor({ after: 'c2', has_more: 'true' }), undefined, 'a string is not true');
  assert.equal(nextCursor(undefined), undefined);
  assert.equal(nextCursor(['c2']), undefined);
});
