import type { Queryable } from '@adsmcp/runtime/db';
import type { EventSetting, EventType, Pixel } from '../conversions.ts';
import type { PageOf, PageRequest } from '../paging.ts';
import { pageBySeq } from './seq-page.ts';

interface PixelRow {
  seq: number;
  id: string;
  account_id: string;
  name: string;
  client_type: string;
  created_at: Date;
}

const PIXEL_COLUMNS = 'seq, id, account_id, name, client_type, created_at';

const toPixel = (r: PixelRow): Pixel => ({
  seq: r.seq,
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  clientType: r.client_type,
  createdAt: r.created_at,
});

/** insertPixel creates a pixel; created at `createdAt`, or the transaction's time when null. */
export async function insertPixel(
  db: Queryable,
  p: { id: string; accountId: string; name: string; clientType: string; createdAt: Date | null },
): Promise<Pixel> {
  const { rows } = await db.query<PixelRow>(
    `INSERT INTO conversion_pixels (id, account_id, name, client_type, created_at)
     VALUES ($1, $2, $3, $4, COALESCE($5, now()))
     RETURNING ${PIXEL_COLUMNS}`,
    [p.id, p.accountId, p.name, p.clientType, p.createdAt],
  );
  return toPixel(rows[0] as PixelRow);
}

/** findPixel returns the pixel `id` of `accountId`, if it has one. */
export async function findPixel(db: Queryable, accountId: string, id: string): Promise<Pixel | undefined> {
  const { rows } = await db.query<PixelRow>(
    `SELECT ${PIXEL_COLUMNS} FROM conversion_pixels WHERE account_id = $1 AND id = $2`,
    [accountId, id],
  );
  const row = rows[0];
  return row === undefined ? undefined : toPixel(row);
}

/** existingPixelIds returns which of `ids` are pixels of `accountId`. */
export async function existingPixelIds(
  db: Queryable,
  accountId: string,
  ids: string[],
): Promise<Set<string>> {
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM conversion_pixels WHERE account_id = $1 AND id = ANY($2::text[])',
    [accountId, ids],
  );
  return new Set(rows.map((r) => r.id));
}

/** pagePixels returns one page of the account's pixels in creation order or its reverse. */
export async function pagePixels(db: Queryable, accountId: string, q: PageRequest): Promise<PageOf<Pixel>> {
  const page = await pageBySeq<PixelRow>(
    db,
    {
      select: PIXEL_COLUMNS,
      from: 'conversion_pixels',
      where: 'account_id = $1',
      params: [accountId],
      seq: 'seq',
    },
    q,
  );
  return { ...page, items: page.items.map(toPixel) };
}

interface EventSettingRow {
  seq: number;
  id: string;
  account_id: string;
  name: string;
  event_type: EventType;
  custom_event_name: string | null;
  attribution_window_days: number;
  source_ids: string[];
  created_at: Date;
}

const SETTING_COLUMNS =
  'seq, id, account_id, name, event_type, custom_event_name, attribution_window_days, source_ids, created_at';

const toSetting = (r: EventSettingRow): EventSetting => ({
  seq: r.seq,
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  eventType: r.event_type,
  customEventName: r.custom_event_name,
  attributionWindowDays: r.attribution_window_days,
  sourceIds: r.source_ids,
  createdAt: r.created_at,
});

/** insertEventSetting creates a conversion event setting. */
export async function insertEventSetting(
  db: Queryable,
  s: Omit<EventSetting, 'seq' | 'createdAt'>,
): Promise<EventSetting> {
  const { rows } = await db.query<EventSettingRow>(
    `INSERT INTO conversion_event_settings
       (id, account_id, name, event_type, custom_event_name, attribution_window_days, source_ids)
     VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb)
     RETURNING ${SETTING_COLUMNS}`,
    [
      s.id,
      s.accountId,
      s.name,
      s.eventType,
      s.customEventName,
      s.attributionWindowDays,
      JSON.stringify(s.sourceIds),
    ],
  );
  return toSetting(rows[0] as EventSettingRow);
}

/** pageEventSettings returns one page of the account's conversion event settings. */
export async function pageEventSettings(
  db: Queryable,
  accountId: string,
  q: PageRequest,
): Promise<PageOf<EventSetting>> {
  const page = await pageBySeq<EventSettingRow>(
    db,
    {
      select: SETTING_COLUMNS,
      from: 'conversion_event_settings',
      where: 'account_id = $1',
      params: [accountId],
      seq: 'seq',
    },
    q,
  );
  return { ...page, items: page.items.map(toSetting) };
}
