/**
 * The conversion tracking and custom audiences every new sandbox account starts with: one web
 * pixel (created 90 days earlier, so it has recent events), a purchase event setting on it, and
 * five audiences of different sizes, one of them archived and accepted under older terms.
 */
import type { Queryable } from '@adsmcp/runtime/db';
import { POLICY_REVISION, PREVIOUS_POLICY_REVISION } from './audiences.ts';
import { newId } from './ids.ts';
import { insertAudience } from './store/audience-store.ts';
import { insertEventSetting, insertPixel } from './store/conversion-store.ts';

const PIXEL_AGE_MS = 90 * 86_400_000;

export const SEED_AUDIENCES = [
  { name: 'Newsletter subscribers', matched: 48_213, archived: false },
  { name: 'Past purchasers (180 days)', matched: 12_874, archived: false },
  { name: 'Cart abandoners', matched: 3_420, archived: false },
  { name: 'VIP customers', matched: 640, archived: false },
  { name: 'Lapsed customers 2024', matched: 22_051, archived: true },
] as const;

/** seedConversionsAndAudiences creates the seeded pixel, event setting and audiences of `accountId`. */
export async function seedConversionsAndAudiences(db: Queryable, accountId: string): Promise<void> {
  const pixel = await insertPixel(db, {
    id: newId('px'),
    accountId,
    name: 'Website pixel',
    clientType: 'web',
    createdAt: new Date(Date.now() - PIXEL_AGE_MS),
  });
  await insertEventSetting(db, {
    id: newId('evs'),
    accountId,
    name: 'Purchases',
    eventType: 'purchase',
    customEventName: null,
    attributionWindowDays: 7,
    sourceIds: [pixel.id],
  });
  for (const a of SEED_AUDIENCES) {
    await insertAudience(db, {
      id: newId('ca'),
      accountId,
      name: a.name,
      status: a.archived ? 'archived' : 'active',
      policyRevision: a.archived ? PREVIOUS_POLICY_REVISION : POLICY_REVISION,
      initialMatchedCount: a.matched,
      createdAt: null,
    });
  }
}
