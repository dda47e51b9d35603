import assert from 'node:assert/strict';
import { test } from 'node:test';
import { array, boolean, enumOf, integer, nullable, number, object, string, validate } from './schema.ts';

const messages = (schema: Parameters<typeof validate>[0], value: unknown) =>
  validate(schema, value).map((i) => i.message);

test('an unknown argument is named, with the allowed ones', () => {
  const s = object({ limit: integer({ min: 1, max: 500 }), after: string() });
  assert.deepEqual(messages(s, { limit: 5, foo: 1 }), ['unknown argument `foo`; allowed: limit, after']);
});

test('an unknown nested property is named with its path', () => {
  const s = object({ body: object({ name: string() }, ['name']) }, ['body']);
  assert.deepEqual(messages(s, { body: { name: 'x', extra: 1 } }), [
    'unknown property of `body` `extra`; allowed: name',
  ]);
});

test('a refusal quotes what it was sent with its hidden characters shown as tokens, never as themselves', () => {
  const s = object({ order: enumOf(['asc', 'desc']), body: object({ name: string() }) });
  assert.deepEqual(messages(s, { order: 'desc\u202e', 'zero\u200bwidth': 1, body: { 'nul\u0000': 1 } }), [
    'unknown argument `zero⟨U+200B⟩width`; allowed: order, body',
    '`order` must be one of asc, desc (got "desc⟨U+202E⟩")',
    'unknown property of `body` `nul⟨U+0000⟩`; allowed: name',
  ]);
});

test('a long value is quoted up to its 40th character, without splitting a character in two', () => {
  const s = object({ order: enumOf(['asc', 'desc']) });
  assert.deepEqual(messages(s, { order: `x${'😀'.repeat(50)}` }), [
    `\`order\` must be one of asc, desc (got "x${'😀'.repeat(39)}…")`,
  ]);
});

test('a missing required argument is named', () => {
  const s = object({ ad_id: string() }, ['ad_id']);
  assert.deepEqual(messages(s, {}), ['`ad_id` is required']);
});

test('integer bounds name the range and the value', () => {
  const s = object({ limit: integer({ min: 1, max: 500 }) });
  assert.deepEqual(messages(s, { limit: 501 }), ['`limit` must be an integer from 1 to 500 (got 501)']);
  assert.deepEqual(messages(s, { limit: 0 }), ['`limit` must be an integer from 1 to 500 (got 0)']);
  assert.deepEqual(messages(s, { limit: 2.5 }), ['`limit` must be an integer from 1 to 500 (got 2.5)']);
  assert.deepEqual(messages(s, { limit: '5' }), ['`limit` must be an integer from 1 to 500 (got "5")']);
  assert.deepEqual(messages(s, { limit: 500 }), []);
});

test('numbers greater than a bound exclude the bound', () => {
  const s = object({ target: number({ greaterThan: 0, max: 1_000_000 }) });
  assert.deepEqual(messages(s, { target: 0 }), [
    '`target` must be a number greater than 0 and at most 1000000 (got 0)',
  ]);
  assert.deepEqual(messages(s, { target: 0.01 }), []);
});

test('string lengths count characters, not bytes', () => {
  const s = object({ title: string({ min: 1, max: 3 }) });
  assert.deepEqual(messages(s, { title: '😀😀😀' }), []);
  assert.deepEqual(messages(s, { title: 'abcd' }), ['`title` must be 1 to 3 characters (got 4)']);
});

test('non-blank strings refuse white space only', () => {
  const s = object({ name: string({ min: 3, max: 1000, nonBlank: true }) });
  assert.deepEqual(messages(s, { name: '    ' }), [
    '`name` must contain a visible character, not only white space',
  ]);
});

test('formats: uuid, date, date-time, https URL', () => {
  const valid = {
    id: '0b0e4b6a-6a0e-4d8e-9c61-3c1f0f7b8a11',
    day: '2024-02-29',
    at: '2026-01-01T10:00:00Z',
    url: 'https://a.example/x',
  };
  const s = object({
    id: string({ format: 'uuid' }),
    day: string({ format: 'date' }),
    at: string({ format: 'date-time' }),
    url: string({ format: 'https-uri' }),
  });
  assert.deepEqual(
    messages(s, { id: 'x', day: '2026-02-30', at: '2026-01-01T10:00:00', url: 'http://a.example' }),
    [
      '`id` must be a UUID (got "x")',
      '`day` must be a date (YYYY-MM-DD) (got "2026-02-30")',
      '`at` must be a date-time (RFC 3339, with a time zone) (got "2026-01-01T10:00:00")',
      '`url` must be an https URL (got "http://a.example")',
    ],
  );
  assert.deepEqual(messages(s, valid), []);
  // Shaped as a date-time, with values no date-time has: the message says which.
  assert.deepEqual(
    ['2026-02-10T24:00:00Z', '9999-12-31T23:59:59-14:00'].map((at) => messages(s, { ...valid, at })),
    [
      [
        '`at` must be a date-time (RFC 3339, with a time zone): hours run 00 to 23 (for midnight at the end of a day, write 00:00 of the next day) (got "2026-02-10T24:00:00Z")',
      ],
      [
        '`at` must be a date-time (RFC 3339, with a time zone): its instant in UTC must fall in the years 0001 to 9999 (got "9999-12-31T23:59:59-14:00")',
      ],
    ],
  );
});

test('enums list the allowed values', () => {
  const s = object({ order: enumOf(['asc', 'desc']) });
  assert.deepEqual(messages(s, { order: 'up' }), ['`order` must be one of asc, desc (got "up")']);
});

test('arrays check their size, uniqueness and each item with its index', () => {
  const s = object({ ids: array(string({ min: 1, max: 3 }), { min: 1, max: 2, unique: true }) });
  assert.deepEqual(messages(s, { ids: [] }), ['`ids` must have 1 to 2 items (got 0)']);
  assert.deepEqual(messages(s, { ids: ['a', 'a'] }), [
    '`ids[1]` repeats an earlier item; items must be unique',
  ]);
  assert.deepEqual(messages(s, { ids: ['a', 'abcd'] }), ['`ids[1]` must be 1 to 3 characters (got 4)']);
});

test('nullable accepts null and checks anything else', () => {
  const s = object({ lp: nullable(object({ q: string() })) });
  assert.deepEqual(messages(s, { lp: null }), []);
  assert.deepEqual(messages(s, { lp: 3 }), ['`lp` must be an object (got number)']);
});

test('booleans are only true or false', () => {
  assert.deepEqual(messages(object({ on: boolean() }), { on: 'yes' }), [
    '`on` must be true or false (got "yes")',
  ]);
});

test('the published JSON Schema states the same rules', () => {
  const s = object(
    { limit: integer({ min: 1, max: 500 }), name: string({ min: 3, max: 1000, nonBlank: true }) },
    ['name'],
  );
  assert.deepEqual(s.json, {
    type: 'object',
    properties: {
      limit: { type: 'integer', minimum: 1, maximum: 500 },
      name: { type: 'string', minLength: 3, maxLength: 1000, pattern: '\\S' },
    },
    additionalProperties: false,
    required: ['name'],
  });
});

test('strings refuse the NUL character, which no record can store', () => {
  const s = object({ query: string({ max: 200 }) });
  assert.deepEqual(messages(s, { query: 'a\u0000b' }), [
    '`query` must not contain the NUL character (U+0000)',
  ]);
});

test('strings refuse control and format characters by code point, since they change how text is displayed', () => {
  const s = object({ name: string({ max: 200 }), notes: string({ max: 5000, multiline: true }) });
  const hidden = (ch: string) =>
    `\`name\` must not contain the invisible character ${ch}: control, format and blank characters hide or change what the text shows`;
  assert.deepEqual(messages(s, { name: 'pa\u202Eused' }), [hidden('U+202E')]);
  assert.deepEqual(messages(s, { name: 'a\u2066b\u2069' }), [hidden('U+2066')]);
  assert.deepEqual(messages(s, { name: 'a\u200Bb' }), [hidden('U+200B')]);
  assert.deepEqual(messages(s, { name: 'bell\u0007' }), [hidden('U+0007')]);
  assert.deepEqual(messages(s, { name: '\u001b[31mred' }), [hidden('U+001B')]);
  assert.deepEqual(messages(s, { name: 'two\nlines' }), [hidden('U+000A')]);
  // An emoji sequence keeps its joiner; the same joiner between letters is refused.
  assert.deepEqual(messages(s, { name: 'Coders \u{1F469}\u200D\u{1F4BB}' }), []);
  assert.deepEqual(messages(s, { name: 'a\u200Db' }), [hidden('U+200D')]);
  // Multi-line text may break lines and indent, and nothing else.
  assert.deepEqual(messages(s, { notes: 'one\r\n\ttwo' }), []);
  assert.deepEqual(messages(s, { notes: 'one\u202Etwo' }), [
    '`notes` must not contain the invisible character U+202E: control, format and blank characters hide or change what the text shows (line breaks and tabs are allowed)',
  ]);
});

test('a non-blank string needs a visible character: zero-width and blank letters count as white space', () => {
  const s = object({ title: string({ max: 50, nonBlank: true, multiline: true }) });
  const blank = ['`title` must contain a visible character, not only white space'];
  assert.deepEqual(messages(s, { title: ' \t ' }), blank);
  // Blank letters are hidden characters too, refused by name.
  assert.deepEqual(messages(s, { title: '\u3164\u2800' }), [
    '`title` must not contain the invisible character U+3164: control, format and blank characters hide or change what the text shows (line breaks and tabs are allowed)',
  ]);
  assert.deepEqual(messages(s, { title: ' x ' }), []);
});

test('an http URL must be absolute and http or https', () => {
  const s = object({ target_url: string({ max: 2048, format: 'http-uri' }) });
  const bad = (got: string) => [
    `\`target_url\` must be an absolute http or https URL (got ${JSON.stringify(got)})`,
  ];
  assert.deepEqual(messages(s, { target_url: 'javascript:alert(1)' }), bad('javascript:alert(1)'));
  assert.deepEqual(messages(s, { target_url: '/relative/path' }), bad('/relative/path'));
  assert.deepEqual(messages(s, { target_url: '' }), bad(''));
  assert.deepEqual(messages(s, { target_url: 'http://shop.example.com/a' }), []);
  assert.deepEqual(messages(s, { target_url: 'https://shop.example.com/a?b=1' }), []);
});

test('a URL is kept as written: what the URL parser would quietly mend is refused', () => {
  const s = object({ url: string({ format: 'https-uri' }) });
  const bad = (got: string) => [
    `\`url\` must be an https URL${/[\s\\]/.test(got) ? ' with no spaces or backslashes' : ''} (got ${JSON.stringify(got)})`,
  ];
  for (const got of [
    'https:example.com/a',
    'https:/example.com/a',
    'HTTPS://example.com/',
    'https:\\\\example.com\\a',
    ' https://example.com/',
    'https://example.com/ ',
    'https://example.com/a b',
    'https://',
  ]) {
    assert.deepEqual(messages(s, { url: got }), bad(got), got);
  }
  for (const good of [
    'https://example.com',
    'https://shop.example.com/a%20b?q=1#x',
    'https://bücher.example/ü',
  ]) {
    assert.deepEqual(messages(s, { url: good }), [], good);
  }
});
