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

test('in a body of 10,000 members, one __proto__ or constructor.prototype is found and named; without them the body is kept whole', () => {
  const members = Array.from({ length: 10_000 }, (_, i) => ({
    email_sha256: i.toString(16).padStart(64, '0'),
  }));
  const body = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { arguments: { members } } };
  assert.deepEqual(parseJsonBody(JSON.stringify(body)), body);
  const withKey = (at: number, key: string) =>
    JSON.stringify(body).replace(
      `{"email_sha256":"${at.toString(16).padStart(64, '0')}"}`,
      `{"email_sha256":"x","${key}":{"prototype":{}}}`,
    );
  assert.throws(
    () => parseJsonBody(withKey(7_321, '__proto__')),
    /"params\.arguments\.members\[7321\]\.__proto__" is not accepted/,
  );
  assert.throws(
    () => parseJsonBody(withKey(9_999, 'constructor')),
    /"params\.arguments\.members\[9999\]\.constructor\.prototype" is not accepted/,
  );
  // A "constructor" that is only text is data like any other.
  assert.doesNotThrow(() => parseJsonBody('{"params":{"constructor":"x","a":[{"constructor":{"name":1}}]}}'));
});
