import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  createPrincipalSigner,
  createPrincipalVerifier,
  generatePrincipalKeys,
  type Principal,
} from '../src/principal.ts';
import { EDITOR } from './fixtures.ts';

const principal: Principal = { ...EDITOR, workspaceId: 'ws-1' };

test('the signer reuses a token while it has more than 20 s left, then signs a new one', async () => {
  let now = 1_800_000_000_000; // a fake clock, in ms
  const keys = await generatePrincipalKeys();
  const signer = await createPrincipalSigner(keys.privateKeyPem, undefined, () => now);
  const first = await signer.sign(principal, 'marketing');
  assert.equal(await signer.sign(principal, 'marketing'), first);
  assert.notEqual(await signer.sign(principal, 'changes'), first, 'another audience gets its own token');
  assert.notEqual(
    await signer.sign({ ...principal, role: 'viewer' }, 'marketing'),
    first,
    'another principal too',
  );
  now += 39_000;
  assert.equal(await signer.sign(principal, 'marketing'), first);
  now += 2_000; // 19 s left
  assert.notEqual(await signer.sign(principal, 'marketing'), first);
});

test('a verified token is remembered only until it expires', async () => {
  let now = 1_800_000_000_000;
  const keys = await generatePrincipalKeys();
  const signer = await createPrincipalSigner(keys.privateKeyPem, undefined, () => now);
  const verifier = await createPrincipalVerifier(keys.publicKeyPem, 'marketing', () => now);
  const token = await signer.sign(principal, 'marketing');
  assert.deepEqual(await verifier.verify(token), principal);
  now += 59_000;
  assert.deepEqual(await verifier.verify(token), principal);
  now += 2_000; // past the 60 s lifetime
  await assert.rejects(verifier.verify(token));
});

test('a token verified for one audience is not accepted by a verifier of another', async () => {
  const keys = await generatePrincipalKeys();
  const signer = await createPrincipalSigner(keys.privateKeyPem);
  const token = await signer.sign(principal, 'marketing');
  const marketing = await createPrincipalVerifier(keys.publicKeyPem, 'marketing');
  const changes = await createPrincipalVerifier(keys.publicKeyPem, 'changes');
  await marketing.verify(token);
  await assert.rejects(changes.verify(token));
});
