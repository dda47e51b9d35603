/**
 * Webhook secrets at rest, as the upstream-proxy keeps platform credentials: AES-256-GCM, stored
 * as nonce (12 bytes) || ciphertext || tag (16 bytes), the workspace and webhook bound as
 * additional authenticated data (a sealed secret copied into another row does not open). The
 * secret itself must be kept, not a hash of it: every delivery is signed with it.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const AAD_PURPOSE = 'adsmcp/webhook-secret/v1';

export interface SecretBinding {
  workspaceId: string;
  webhookId: string;
}

export interface SecretCipher {
  seal(secret: string, binding: SecretBinding): Buffer;
  open(sealed: Buffer, binding: SecretBinding): string;
}

/**
 * The key: WEBHOOK_SECRET_KEY (base64 of 32 bytes) when set; otherwise derived (HKDF-SHA256) from
 * the service's own private key, which every process of the service already holds, so that
 * `npm start` and a deployment need no new secret to use webhooks.
 */
export function webhookKey(configured: string | undefined, servicePrivateKeyPem: string): Buffer {
  if (configured !== undefined && configured !== '') {
    const key = Buffer.from(configured, 'base64');
    if (key.length !== KEY_BYTES) {
      throw new RangeError(
        `WEBHOOK_SECRET_KEY must be ${KEY_BYTES} bytes in base64 (got ${key.length} bytes)`,
      );
    }
    return key;
  }
  return Buffer.from(hkdfSync('sha256', servicePrivateKeyPem, 'adsmcp-changes', AAD_PURPOSE, KEY_BYTES));
}

function aad(b: SecretBinding): Buffer {
  return Buffer.from(JSON.stringify([AAD_PURPOSE, b.workspaceId, b.webhookId]), 'utf8');
}

export function createSecretCipher(key: Buffer): SecretCipher {
  if (key.length !== KEY_BYTES) throw new RangeError(`a webhook key must be ${KEY_BYTES} bytes`);
  const k = Buffer.from(key);
  return {
    seal(secret, binding) {
      const nonce = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv('aes-256-gcm', k, nonce, { authTagLength: TAG_BYTES });
      cipher.setAAD(aad(binding));
      const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
      return Buffer.concat([nonce, body, cipher.getAuthTag()]);
    },
    open(sealed, binding) {
      const nonce = sealed.subarray(0, NONCE_BYTES);
      const tag = sealed.subarray(sealed.length - TAG_BYTES);
      const body = sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES);
      const decipher = createDecipheriv('aes-256-gcm', k, nonce, { authTagLength: TAG_BYTES });
      decipher.setAAD(aad(binding));
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
    },
  };
}
