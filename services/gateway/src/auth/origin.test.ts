import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createOriginPolicy } from './origin.ts';

test('on loopback, localhost, 127.0.0.1 and [::1] with the same scheme and port are one origin', () => {
  const policy = createOriginPolicy('http://127.0.0.1:8080');
  for (const origin of ['http://127.0.0.1:8080', 'http://localhost:8080', 'http://[::1]:8080']) {
    assert.equal(policy.allows(origin), true, origin);
  }
  for (const origin of [
    'http://localhost:8081',
    'https://localhost:8080',
    'http://127.0.0.2:8080',
    'null',
    '',
  ]) {
    assert.equal(policy.allows(origin), false, origin);
  }
});

test('a public host is only itself, and default ports match their absence', () => {
  const policy = createOriginPolicy('https://ads.example.com/', ['http://localhost:3000']);
  assert.equal(policy.allows('https://ads.example.com'), true);
  assert.equal(policy.allows('https://ads.example.com:443'), true);
  assert.equal(policy.allows('http://localhost:443'), false);
  assert.equal(policy.allows('http://127.0.0.1:3000'), true, 'an extra loopback origin has its aliases too');
});
