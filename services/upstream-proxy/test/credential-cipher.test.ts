import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { CredentialDecryptionError, createCredentialCipher } from '../src/domain/credential-cipher.ts';

const cipher = createCredentialCipher(randomBytes(32));
const binding = { workspaceId: randomUUID(), accountId: randomUUID() };
const CREDENTIAL = 'sbx_example-credential-ÄÖ';

describe('credential cipher', () => {
  it('opens what it sealed', () => {
    assert.equal(cipher.open(cipher.seal(CREDENTIAL, binding), binding), CREDENTIAL);
  });

  it('seals as nonce || ciphertext || tag, with a fresh nonce each time and no plaintext', () => {
    const a = cipher.seal(CREDENTIAL, binding);
    const b = cipher.seal(CREDENTIAL, binding);
    assert.equal(a.length, 12 + Buffer.byteLength(CREDENTIAL) + 16);
    assert.notDeepEqual(a.subarray(0, 12), b.subarray(0, 12));
    assert.equal(a.includes(Buffer.from('sbx_example')), false);
  });

  it('refuses a ciphertext with any byte altered', () => {
    const sealed = cipher.seal(CREDENTIAL, binding);
    for (const index of [0, 12, sealed.length - 1]) {
      const tampered = Buffer.from(sealed);
      tampered[index] = (tampered[index] ?? 0) ^ 0x01;
      assert.throws(() => cipher.open(tampered, binding), CredentialDecryptionError);
    }
    assert.throws(() => cipher.open(sealed.subarray(0, 28), binding), CredentialDecryptionError);
  });

  it('refuses a ciphertext moved to another account or workspace', () => {
    const sealed = cipher.seal(CREDENTIAL, binding);
    assert.throws(
      () => cipher.open(sealed, { ...binding, accountId: randomUUID() }),
      CredentialDecryptionError,
    );
    assert.throws(
      () => cipher.open(sealed, { ...binding, workspaceId: randomUUID() }),
      CredentialDecryptionError,
    );
  });

  it('refuses a ciphertext sealed with another key', () => {
    const other = createCredentialCipher(randomBytes(32));
    assert.throws(() => other.open(cipher.seal(CREDENTIAL, binding), binding), CredentialDecryptionError);
  });

  it('takes only a 32-byte key', () => {
    assert.throws(() => createCredentialCipher(randomBytes(16)), RangeError);
  });
});
