import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ChangeResolution,
  ChangeResolutionSchema,
  ChangeStatus,
  ChangeStatusSchema,
} from '@adsmcp/proto/changes/v1/changes_pb';
import { enumValue, enumWord, enumWords } from './enum-words.ts';

test("an enum value's word is its name without the enum's prefix, in lower case, and names it back", () => {
  assert.equal(enumWord(ChangeResolutionSchema, ChangeResolution.NOT_APPLIED), 'not_applied');
  assert.deepEqual(enumWords(ChangeStatusSchema), [
    'prepared',
    'approved',
    'expired',
    'rejected',
    'applying',
    'applied',
    'failed',
  ]);
  for (const word of enumWords(ChangeStatusSchema))
    assert.equal(enumWord(ChangeStatusSchema, enumValue(ChangeStatusSchema, word)), word);
});

test('the zero value has no word, and a word or a number the enum lacks is refused by name', () => {
  assert.equal(enumWord(ChangeStatusSchema, ChangeStatus.UNSPECIFIED), null);
  assert.throws(
    () => enumValue(ChangeStatusSchema, 'pending'),
    /changes\.v1\.ChangeStatus has no value for the word "pending" \(its words: prepared, approved, expired/,
  );
  assert.throws(() => enumValue(ChangeStatusSchema, 'unspecified'), /no value for the word "unspecified"/);
  assert.throws(() => enumWord(ChangeStatusSchema, 42), /changes\.v1\.ChangeStatus has no value 42/);
});
