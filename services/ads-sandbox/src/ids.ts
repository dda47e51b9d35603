/** The platform's ids: a prefix naming the kind of object, `_`, and 16 random hex digits. */
import { createHash, randomBytes } from 'node:crypto';

/**
 * The prefixes: accounts, campaigns, ad groups, ads, product feeds, bulk jobs, pixels, event
 * settings, custom audiences and custom audience operations.
 */
export type IdPrefix = 'act' | 'cmp' | 'adg' | 'ad' | 'pf' | 'job' | 'px' | 'evs' | 'ca' | 'op';

/** newId returns a new `<prefix>_<16 hex>` id. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBytes(8).toString('hex')}`;
}

/** The hex SHA-256 of `data` (text as UTF-8): the platform's content hashes and derived ids. */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}
