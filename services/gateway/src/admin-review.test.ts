import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ChangeSchema } from '@adsmcp/proto/changes/v1/changes_pb';
import { create } from '@bufbuild/protobuf';
import { reviewText } from './admin-review.ts';

const change = (before: object, path: string, body: object) =>
  create(ChangeSchema, {
    changeId: '6f1c2a8e-1111-4222-8333-944445555666',
    accountId: 'acc-1',
    summary: 'Update ad "Summer\u202Esale"',
    operation: { method: 'POST', path, bodyJson: JSON.stringify(body) },
    targetBeforeJson: JSON.stringify(before),
    digest: 'abc123',
    preparedAt: '2026-01-01T00:00:00Z',
    preparedBy: 'credential:x',
  });

test('the review shows each field before and after, the exact request and the digest', () => {
  const text = reviewText(change({ name: 'Old', status: 'active' }, '/ads/ad_1', { status: 'paused' }));
  const lines = text.split('\n');
  assert.ok(lines.includes('  status: "active" -> "paused"'), text);
  assert.ok(lines.includes('Exact request: POST /ads/ad_1'), text);
  assert.ok(lines.includes('Digest: abc123'), text);
});

test('an archive is shown as status becoming archived', () => {
  const text = reviewText(change({ status: 'paused' }, '/ads/ad_1/archive', {}));
  assert.ok(text.split('\n').includes('  status: "paused" -> "archived"'), text);
});

test('invisible characters in the summary, the values and the request are spelled out, never sent raw', () => {
  const text = reviewText(
    change({ name: 'deus\u200Bap' }, '/ads/ad_1', { name: 'paused\u202E\u0085', note: 'bell\u0007' }),
  );
  assert.match(text, /^Summary: Update ad "Summer⟨U\+202E⟩sale"$/m);
  assert.match(text, /^ {2}name: "deus⟨U\+200B⟩ap" -> "paused⟨U\+202E⟩⟨U\+0085⟩"$/m);
  assert.match(text, /^ {2}note: \(unset\) -> "bell\\u0007"$/m);
  const raw = [...text].filter((c) => c !== '\n' && /[\p{Cc}\p{Cf}]/u.test(c));
  assert.deepEqual(raw, [], 'no control or format character reaches the terminal');
});
