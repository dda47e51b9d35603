/**
 * Conversion tracking: pixels (conversion sources), the events they report, and conversion event
 * settings. Sampled events are derived from the pixel id and the clock, never stored, and carry
 * no personal data: no IP address, user agent, email, phone or click id, only which kinds of
 * match keys an event arrived with.
 */
import { createHash } from 'node:crypto';
import { COUNTRIES, DEVICES } from './insights.ts';

export const CLIENT_TYPES = ['web'] as const;
/** The standard events a pixel reports, and `custom` for an event named by the advertiser. */
export const EVENT_TYPES = [
  'page_visit',
  'view_content',
  'search',
  'add_to_cart',
  'add_to_wishlist',
  'purchase',
  'lead',
  'sign_up',
  'custom',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
/** The click-through attribution windows the platform offers, in days. */
export const ATTRIBUTION_WINDOW_DAYS = [1, 7, 28] as const;
export const MAX_SOURCE_IDS = 20;
export const EVENTS_DEFAULT_LIMIT = 10;
export const EVENTS_MAX_LIMIT = 50;
/** A pixel reports one sampled event per slot of this length. */
const EVENT_SLOT_MS = 10 * 60_000;
/** How long after an event the platform received it, at most. */
const MAX_RECEIVE_DELAY_MS = 90_000;
const MATCH_KEYS = ['click_id', 'email_sha256', 'phone_sha256', 'external_id_sha256'] as const;
const SAMPLED_EVENT_TYPES: readonly EventType[] = [
  'page_visit',
  'page_visit',
  'page_visit',
  'view_content',
  'view_content',
  'search',
  'add_to_cart',
  'add_to_wishlist',
  'purchase',
  'lead',
  'sign_up',
];
const VALUED: ReadonlySet<EventType> = new Set(['add_to_cart', 'purchase']);

export interface Pixel {
  seq: number;
  id: string;
  accountId: string;
  name: string;
  clientType: string;
  createdAt: Date;
}

/** pixelJson is a pixel as the API returns it. */
export function pixelJson(p: Pixel) {
  return {
    id: p.id,
    account_id: p.accountId,
    name: p.name,
    client_type: p.clientType,
    status: 'active',
    created_at: p.createdAt.toISOString(),
  };
}

export interface EventSetting {
  seq: number;
  id: string;
  accountId: string;
  name: string;
  eventType: EventType;
  customEventName: string | null;
  attributionWindowDays: number;
  sourceIds: string[];
  createdAt: Date;
}

/** eventSettingJson is a conversion event setting as the API returns it. */
export function eventSettingJson(s: EventSetting) {
  return {
    id: s.id,
    account_id: s.accountId,
    name: s.name,
    event_type: s.eventType,
    custom_event_name: s.customEventName,
    attribution_window_days: s.attributionWindowDays,
    source_ids: s.sourceIds,
    created_at: s.createdAt.toISOString(),
  };
}

function digestOf(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

/** One sampled event: the pixel's event in slot `slot` (slots count EVENT_SLOT_MS from the epoch). */
function sampledEvent(pixel: Pixel, slot: number, now: number, currency: string) {
  const d = digestOf(`${pixel.id}|${slot}`);
  const u = (i: number): number => d.readUInt32BE(i * 4) / 2 ** 32;
  const pick = <T>(values: readonly T[], i: number): T => values[Math.floor(u(i) * values.length)] as T;
  const eventType = pick(SAMPLED_EVENT_TYPES, 0);
  const eventAt = slot * EVENT_SLOT_MS + Math.floor(u(1) * EVENT_SLOT_MS);
  const matchKeys = MATCH_KEYS.filter((_, i) => ((d[28] ?? 0) >> i) & 1);
  return {
    id: `evt_${d.subarray(24, 32).toString('hex')}`,
    pixel_id: pixel.id,
    event_type: eventType,
    event_at: new Date(eventAt).toISOString(),
    received_at: new Date(Math.min(now, eventAt + Math.floor(u(2) * MAX_RECEIVE_DELAY_MS))).toISOString(),
    page_url: `https://shop.example.com/products/${1 + Math.floor(u(3) * 400)}`,
    device_type: pick(DEVICES, 4),
    country: pick(COUNTRIES, 5),
    value_micros: VALUED.has(eventType) ? Math.round((5 + u(6) * 195) * 100) * 10_000 : null,
    currency: VALUED.has(eventType) ? currency : null,
    match_keys_present: matchKeys.length === 0 ? ['click_id'] : matchKeys,
  };
}

/**
 * sampledEvents returns a pixel's `limit` most recent sampled events at instant `now`, newest
 * first: one per finished ten-minute slot since the pixel was created, the same for every call
 * within a slot. A pixel created in the last ten minutes has none yet.
 */
export function sampledEvents(pixel: Pixel, now: number, limit: number, currency: string) {
  const current = Math.floor(now / EVENT_SLOT_MS);
  const first = Math.ceil(pixel.createdAt.getTime() / EVENT_SLOT_MS);
  const count = Math.max(0, Math.min(limit, current - first));
  return Array.from({ length: count }, (_, i) => sampledEvent(pixel, current - 1 - i, now, currency));
}
