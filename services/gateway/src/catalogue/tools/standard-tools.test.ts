import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validate } from '../schema.ts';
import { saveAccountStandard } from './standard-tools.ts';

test('a template value or key that could not be stored (a lone surrogate) is refused, naming where', () => {
  const save = (template: Record<string, unknown>) =>
    validate(saveAccountStandard.input, {
      account_id: '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90',
      name: 'Spring template',
      kind: 'template',
      data: { template: template },
    }).map((i) => i.message);
  assert.deepEqual(save({ creative: { title: 'Spring \ud83d' } }), [
    '`data.template.creative.title` must be well-formed Unicode (it holds a lone surrogate)',
  ]);
  assert.deepEqual(save({ ['cta\udc00']: 'Shop' }), [
    'a key of `data.template` must be well-formed Unicode (it holds a lone surrogate)',
  ]);
  assert.deepEqual(save({ creative: { title: 'Spring 🌱' } }), [], 'a whole pair is a character');
});
