import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BodyError, MAX_JSON_DEPTH, parseJsonBody } from './json-body.ts';

test('a body nested to the limit is accepted, one level more is refused naming the limit', () => {
  const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
  assert.doesNotThrow(() => parseJsonBody(nested(MAX_JSON_DEPTH)));
  assert.throws(
    () => parseJsonBody(nested(MAX_JSON_DEPTH + 1)),
    (err: unknown) => err instanceof BodyError && /limit of 64 levels/.test(err.message),
  );
});

test('a body nested 100,000 levels is refused without overflowing the stack', () => {
  const text = `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`;
  assert.throws(() => parseJsonBody(text), BodyError);
});

test('a __proto__ property is refused with its path', () => {
  assert.throws(
    () => parseJsonBody('{"params":{"arguments":[{"__proto__":{}}]}}'),
    /"params\.arguments\[0\]\.__proto__" is not accepted/,
  );
});
