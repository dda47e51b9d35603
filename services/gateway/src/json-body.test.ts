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

test('a body that is not UTF-8 is refused as a parse error naming the byte offset of the first bad sequence', () => {
  const cases: [string, Buffer, number][] = [
    [
      'a lone continuation byte',
      Buffer.concat([Buffer.from('{"text":"caf'), Buffer.from([0x80]), Buffer.from('"}')]),
      12,
    ],
    ['Latin-1 é', Buffer.from('{"text":"café"}', 'latin1'), 12],
    [
      'an overlong NUL',
      Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xc0, 0x80]), Buffer.from('"}')]),
      6,
    ],
    [
      'an encoded surrogate',
      Buffer.concat([Buffer.from('["'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"]')]),
      2,
    ],
    ['a sequence cut short at the end', Buffer.concat([Buffer.from('["€'), Buffer.from([0xe2, 0x82])]), 5],
    // A U+FFFD the client really sent is text like any other: the offset is that of the bad byte after it.
    [
      'a bad byte after a real U+FFFD',
      Buffer.concat([Buffer.from('["\uFFFD'), Buffer.from([0xff]), Buffer.from('"]')]),
      5,
    ],
  ];
  for (const [what, bytes, offset] of cases) {
    assert.throws(
      () => parseJsonBody(bytes),
      (err: unknown) =>
        err instanceof BodyError &&
        err.rpcCode === -32700 &&
        err.message ===
          `Parse error: the body is not valid UTF-8 (the first invalid byte sequence starts at byte offset ${offset}); JSON must be sent as UTF-8`,
      what,
    );
  }
});

test('UTF-8 bytes are decoded exactly, a real U+FFFD and characters beyond the BMP included', () => {
  const body = { text: 'café \uFFFD 😀 日本' };
  assert.deepEqual(parseJsonBody(Buffer.from(JSON.stringify(body), 'utf8')), body);
});
