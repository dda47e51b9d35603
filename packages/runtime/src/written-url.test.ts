import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isWrittenUrl } from './written-url.ts';

test('a URL is written as it will be used: its scheme, a host, no white space or backslash', () => {
  for (const ok of [
    'https://shop.example.com/a?b=1',
    'https://xn--bcher-kva.example/',
    'https://10.0.0.1:8443/x',
  ])
    assert.equal(isWrittenUrl(ok), true, ok);
  for (const bad of [
    'http://shop.example.com/',
    'HTTPS://shop.example.com/',
    'https:shop.example.com/x',
    'https://shop.example.com/spring sale',
    'https://shop.example.com\\@evil.test/',
    'https://',
    'shop.example.com',
  ])
    assert.equal(isWrittenUrl(bad), false, bad);
  assert.equal(isWrittenUrl('http://shop.example.com/', 'http-or-https'), true);
  assert.equal(isWrittenUrl('ftp://shop.example.com/', 'http-or-https'), false);
});
