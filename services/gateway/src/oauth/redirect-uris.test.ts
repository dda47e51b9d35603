import assert from 'node:assert/strict';
import { test } from 'node:test';
import { redirectUriProblem, redirectUrisProblem } from './redirect-uris.ts';

test('https and loopback http redirect URIs are accepted', () => {
  assert.equal(redirectUriProblem('https://client.example/callback'), undefined);
  assert.equal(redirectUriProblem('http://127.0.0.1:33418/callback'), undefined);
  assert.equal(redirectUriProblem('http://localhost/cb'), undefined);
  assert.equal(redirectUriProblem('http://[::1]:9000/cb'), undefined);
});

test('plain http to another host, other schemes and fragments are refused, naming the field', () => {
  assert.match(redirectUriProblem('http://client.example/cb') ?? '', /^redirect_uris: .*https/);
  assert.match(redirectUriProblem('javascript:alert(1)') ?? '', /redirect_uris/);
  assert.match(redirectUriProblem('https://client.example/cb#x') ?? '', /fragment/);
  assert.match(redirectUriProblem('not a url') ?? '', /absolute URL/);
  assert.match(redirectUrisProblem(Array(11).fill('https://a.example/cb')) ?? '', /at most 10/);
});
