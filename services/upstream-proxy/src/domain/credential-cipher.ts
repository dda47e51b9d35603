/**
 * Platform credentials at rest: AES-256-GCM, stored as nonce (12 bytes) || ciphertext || tag
 * (16 bytes). The workspace and account the credential belongs to are bound as additional
 * authenticated data, so a ciphertext copied into another row, or another workspace, does not open.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

export const CREDENTIAL_KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
/** Names the purpose and format, so this key's ciphertexts cannot be taken for anything else. */
const AAD_PURPOSE = 'adsmcp/upstream-credential/v1';

/** The row a credential is sealed for. */
export interface CredentialBinding {
  workspaceId: string;
  accountId: string;
}

export interface CredentialCipher {
  /** Seals `credential` for the row named by `binding`, with a fresh random nonce. */
  seal(credential: string, binding: CredentialBinding): Buffer;
  /** Opens a sealed credential; throws CredentialDecryptionError when it was altered or sealed for another row. */
  open(sealed: Buffer, binding: CredentialBinding): string;
}

/** A sealed credential that does not open with this key and binding. */
export class CredentialDecryptionError extends Error {
  override name = 'CredentialDecryptionError';
}

function aad(binding: CredentialBinding): Buffer {
  return Buffer.from(JSON.stringify([AAD_PURPOSE, binding.workspaceId, binding.accountId]), 'utf8');
}

/** createCredentialCipher returns a cipher over a 32-byte AES-256 key. */
export function createCredentialCipher(key: Buffer): CredentialCipher {
  if (key.length !== CREDENTIAL_KEY_BYTES) {
    throw new RangeError(`credential key must be ${CREDENTIAL_KEY_BYTES} bytes, got ${key.length}`);
  }
  const secret = Buffer.from(key);
  return {
    seal(credential, binding) {
      const nonce = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv('aes-256-gcm', secret, nonce, { authTagLength: TAG_BYTES });
      cipher.setAAD(aad(binding));
      const body = Buffer.concat([cipher.update(credential, 'utf8'), cipher.final()]);
      return Buffer.concat([nonce, body, cipher.getAuthTag()]);
    },
    open(sealed, binding) {
      if (sealed.length <= NONCE_BYTES + TAG_BYTES) {
        throw new CredentialDecryptionError('sealed credential is too short');
      }
      const nonce = sealed.subarray(0, NONCE_BYTES);
      const tag = sealed.subarray(sealed.length - TAG_BYTES);
      const body = sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES);
      try {
        const decipher = createDecipheriv('aes-256-gcm', secret, nonce, { authTagLength: TAG_BYTES });
        decipher.setAAD(aad(binding));
        decipher.setAuthTag(tag);
        return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
      } catch {
        throw new CredentialDecryptionError('sealed credential does not open with this key for this account');
      }
    },
  };
}
