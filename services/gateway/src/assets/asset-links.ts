/**
 * Temporary delivery links to a campaign asset's image: `/assets/{asset_id}?token=…`, where the
 * token names the workspace and an expiry and carries an HMAC-SHA-256 over the asset, the
 * workspace and the expiry. The key is derived (HKDF) from the gateway's principal signing key,
 * so every replica checks every other's links and no new secret needs deploying; rotating that
 * key ends every link. A link proves only that the gateway issued it for that asset and that it
 * has not expired: the serving route still asks the marketing service on every request, which
 * refuses an archived asset, so archiving revokes every link at once.
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/** How long a link works unless configured: long enough to review an image, short if leaked. */
export const LINK_TTL_SECONDS_DEFAULT = 600;

const TOKEN =
  /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/;

export type LinkCheck =
  | { ok: true; workspaceId: string; expiresAt: Date }
  | { ok: false; reason: 'invalid' | 'expired' };

export interface AssetLinks {
  /**
   * A link to the image of `assetId` of `workspaceId`, working until `expiresAt`: the absolute
   * `url`, and its `path` (with the token) for the gateway's own pages.
   */
  link(workspaceId: string, assetId: string): { url: string; path: string; expiresAt: Date };
  /** Whether `token` is a link the gateway issued for `assetId` that has not expired. */
  check(assetId: string, token: string): LinkCheck;
}

export interface AssetLinkOptions {
  /** Secret key material (the gateway's principal signing key, PEM); the HMAC key is derived from it. */
  keyMaterial: string;
  /** The gateway's public base URL, which links start with. */
  publicUrl: string;
  ttlSeconds: number;
  /** Milliseconds since the epoch; tests move it. */
  now?: () => number;
}

/** createAssetLinks issues and checks delivery links with a key derived from `keyMaterial`. */
export function createAssetLinks(o: AssetLinkOptions): AssetLinks {
  const key = Buffer.from(hkdfSync('sha256', o.keyMaterial, 'adsmcp', 'asset delivery links v1', 32));
  const now = o.now ?? Date.now;
  const mac = (assetId: string, workspaceId: string, expires: string) =>
    createHmac('sha256', key).update(`v1\n${assetId}\n${workspaceId}\n${expires}`).digest();
  return {
    link(workspaceId, assetId) {
      const expires = Math.floor(now() / 1000) + o.ttlSeconds;
      const asset = assetId.toLowerCase();
      const workspace = workspaceId.toLowerCase();
      const sig = mac(asset, workspace, String(expires)).toString('base64url');
      const path = `/assets/${asset}?token=${workspace}.${expires}.${sig}`;
      return { url: `${o.publicUrl}${path}`, path, expiresAt: new Date(expires * 1000) };
    },
    check(assetId, token) {
      const m = TOKEN.exec(token);
      if (m === null) return { ok: false, reason: 'invalid' };
      const [, workspaceId = '', expires = '', sig = ''] = m;
      const given = Buffer.from(sig, 'base64url');
      // Only the one spelling the gateway writes: base64url's last character has spare bits.
      if (given.toString('base64url') !== sig) return { ok: false, reason: 'invalid' };
      const expected = mac(assetId.toLowerCase(), workspaceId, expires);
      // Constant time: how much of a guessed signature is right must not show in the timing.
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        return { ok: false, reason: 'invalid' };
      }
      const expiresAt = new Date(Number(expires) * 1000);
      if (expiresAt.getTime() <= now()) return { ok: false, reason: 'expired' };
      return { ok: true, workspaceId, expiresAt };
    },
  };
}
