/**
 * The authorization server's secrets, derived from the gateway's key material so that every
 * replica signs and reads the same cookies and publishes the same keys without another secret
 * to configure.
 */
import { createECDH, hkdfSync } from 'node:crypto';

function derive(keyMaterial: string, label: string): Buffer {
  return Buffer.from(hkdfSync('sha256', keyMaterial, 'adsmcp-oauth', label, 32));
}

/** Keys that sign the provider's cookies. */
export function cookieKeys(keyMaterial: string): string[] {
  return [derive(keyMaterial, 'cookies').toString('base64url')];
}

/** The provider's ES256 signing key as a private JWK (a P-256 key whose scalar is derived). */
export function signingJwk(keyMaterial: string): {
  kty: 'EC';
  crv: 'P-256';
  d: string;
  x: string;
  y: string;
  kid: string;
  alg: 'ES256';
  use: 'sig';
} {
  const d = derive(keyMaterial, 'signing');
  const ecdh = createECDH('prime256v1');
  ecdh.setPrivateKey(d);
  const pub = ecdh.getPublicKey(); // 0x04 || x || y
  return {
    kty: 'EC',
    crv: 'P-256',
    d: d.toString('base64url'),
    x: pub.subarray(1, 33).toString('base64url'),
    y: pub.subarray(33, 65).toString('base64url'),
    kid: derive(keyMaterial, 'kid').subarray(0, 8).toString('base64url'),
    alg: 'ES256',
    use: 'sig',
  };
}
