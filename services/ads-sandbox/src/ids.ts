/** The platform's ids: a prefix naming the kind of object, `_`, and 16 random hex digits. */
import { randomBytes } from 'node:crypto';

/**
 * The prefixes: accounts, campaigns, ad groups, ads, product feeds, bulk jobs, pixels, event
 * settings, custom audiences and custom audience operations.
 */
export type IdPrefix = 'act' | 'cmp' | 'adg' | 'ad' | 'pf' | 'job' | 'px' | 'evs' | 'ca' | 'op';

/** newId returns a new `<prefix>_<16 hex>` id. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBytes(8).toString('hex')}`;
}
