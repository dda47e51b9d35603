/**
 * The platform's conversion endpoints: pixels (conversion sources), their sampled events,
 * conversion event settings, and attributed conversion insights.
 */
import type { Pool, PoolClient } from '@adsmcp/runtime/db';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { refuseQuery, refuseUnknownParameters } from '../ad-requests.ts';
import {
  type ConversionInsightsBody,
  conversionInsights,
  conversionInsightsSchema,
} from '../conversion-insights.ts';
import {
  ATTRIBUTION_WINDOW_DAYS,
  CLIENT_TYPES,
  EVENT_TYPES,
  EVENTS_DEFAULT_LIMIT,
  EVENTS_MAX_LIMIT,
  type EventType,
  eventSettingJson,
  MAX_SOURCE_IDS,
  pixelJson,
  sampledEvents,
} from '../conversions.ts';
import { invalidRequest, notFound } from '../errors.ts';
import { newId } from '../ids.ts';
import { localTime } from '../local-date.ts';
import { answerMutation } from '../mutation-route.ts';
import { PAGING_PARAMETERS, pageJson, parseLimit, parsePaging, type RawQuery, single } from '../paging.ts';
import { requestAccount } from '../platform.ts';
import {
  existingPixelIds,
  findPixel,
  insertEventSetting,
  insertPixel,
  pageEventSettings,
  pagePixels,
} from '../store/conversion-store.ts';
import { listAdGroupIds, listAdRefs, listCampaignIds } from '../store/insight-store.ts';

export interface ConversionRouteDeps {
  pool: Pool;
  /** The platform guard (authentication, rate limit, faults). */
  guard: (req: FastifyRequest) => Promise<void>;
  /** The sandbox clock (ms since the epoch): creation times, recent events, the current local day. */
  now: () => number;
}

/** The kinds of the pixel and event setting lists' cursors: each list refuses the other's. */
const PIXELS_CURSOR_KIND = 'px';
const SETTINGS_CURSOR_KIND = 'evs';

const nameRule = { type: 'string', minLength: 3, maxLength: 1000, pattern: '\\S' } as const;

const createPixelSchema = {
  body: {
    type: 'object',
    required: ['name', 'client_type'],
    additionalProperties: false,
    properties: { name: nameRule, client_type: { type: 'string', enum: CLIENT_TYPES } },
  },
} as const;

interface CreatePixelBody {
  name: string;
  client_type: string;
}

const createEventSettingSchema = {
  body: {
    type: 'object',
    required: ['name', 'event_type', 'attribution_window_days', 'source_ids'],
    additionalProperties: false,
    properties: {
      name: { type: 'string', minLength: 1, maxLength: 1000, pattern: '\\S' },
      event_type: { type: 'string', enum: EVENT_TYPES },
      custom_event_name: { type: 'string', minLength: 1, maxLength: 100, pattern: '\\S' },
      attribution_window_days: { type: 'integer', enum: ATTRIBUTION_WINDOW_DAYS },
      source_ids: {
        type: 'array',
        minItems: 1,
        maxItems: MAX_SOURCE_IDS,
        uniqueItems: true,
        items: { type: 'string', minLength: 1, maxLength: 100 },
      },
    },
  },
} as const;

interface CreateEventSettingBody {
  name: string;
  event_type: EventType;
  custom_event_name?: string;
  attribution_window_days: number;
  source_ids: string[];
}

/** A custom event is named by the advertiser; a standard one is not. */
function checkCustomEventName(body: CreateEventSettingBody): void {
  if (body.event_type === 'custom' && body.custom_event_name === undefined) {
    throw invalidRequest('custom_event_name', 'custom_event_name is required when event_type is "custom"');
  }
  if (body.event_type !== 'custom' && body.custom_event_name !== undefined) {
    throw invalidRequest(
      'custom_event_name',
      'custom_event_name is allowed only when event_type is "custom"',
    );
  }
}

async function checkSourceIds(db: PoolClient, accountId: string, ids: string[]): Promise<void> {
  const existing = await existingPixelIds(db, accountId, ids);
  ids.forEach((id, i) => {
    if (!existing.has(id))
      throw invalidRequest(`source_ids.${i}`, `source_ids.${i}: no pixel ${id} in this account`);
  });
}

type PixelRequest = FastifyRequest<{ Body: CreatePixelBody; Querystring: RawQuery }>;
type EventSettingRequest = FastifyRequest<{ Body: CreateEventSettingBody; Querystring: RawQuery }>;
type InsightsRequest = FastifyRequest<{ Body: ConversionInsightsBody; Querystring: RawQuery }>;

/** registerConversionRoutes adds the `/conversions/...` endpoints to `app`. */
export function registerConversionRoutes(app: FastifyInstance, deps: ConversionRouteDeps): void {
  const { pool, guard } = deps;
  app.get<{ Querystring: RawQuery }>('/conversions/pixels', { onRequest: guard }, async (req) => {
    const account = requestAccount(req);
    refuseUnknownParameters(req.query, PAGING_PARAMETERS);
    const page = await pagePixels(pool, account.id, parsePaging(req.query, PIXELS_CURSOR_KIND));
    return pageJson(PIXELS_CURSOR_KIND, page, pixelJson);
  });
  app.post<{ Body: CreatePixelBody; Querystring: RawQuery }>(
    '/conversions/pixels',
    { onRequest: guard, schema: createPixelSchema },
    async (req, reply) => createPixel(deps, req, reply),
  );
  app.get<{ Querystring: RawQuery }>('/conversions/events', { onRequest: guard }, async (req) =>
    listEvents(deps, req),
  );
  app.get<{ Querystring: RawQuery }>('/conversions/event_settings', { onRequest: guard }, async (req) => {
    const account = requestAccount(req);
    refuseUnknownParameters(req.query, PAGING_PARAMETERS);
    const page = await pageEventSettings(pool, account.id, parsePaging(req.query, SETTINGS_CURSOR_KIND));
    return pageJson(SETTINGS_CURSOR_KIND, page, eventSettingJson);
  });
  app.post<{ Body: CreateEventSettingBody; Querystring: RawQuery }>(
    '/conversions/event_settings',
    { onRequest: guard, schema: createEventSettingSchema },
    async (req, reply) => createEventSetting(deps, req, reply),
  );
  // A read with a body: no ledger, no Idempotency-Key.
  app.post<{ Body: ConversionInsightsBody; Querystring: RawQuery }>(
    '/conversions/insights',
    { onRequest: guard, schema: conversionInsightsSchema },
    async (req) => insights(deps, req),
  );
}

/** POST /conversions/pixels. */
async function createPixel(deps: ConversionRouteDeps, req: PixelRequest, reply: FastifyReply) {
  refuseQuery(req.query);
  const accountId = requestAccount(req).id;
  return answerMutation(deps.pool, req, reply, req.body, async (client) => {
    const pixel = await insertPixel(client, {
      id: newId('px'),
      accountId,
      name: req.body.name,
      clientType: req.body.client_type,
      createdAt: new Date(deps.now()),
    });
    return { status: 201, body: pixelJson(pixel) };
  });
}

/** GET /conversions/events: a sample of one pixel's recent events. */
async function listEvents(deps: ConversionRouteDeps, req: FastifyRequest<{ Querystring: RawQuery }>) {
  const account = requestAccount(req);
  refuseUnknownParameters(req.query, ['pid', 'limit']);
  const pid = single(req.query, 'pid');
  if (pid === undefined || pid === '') throw invalidRequest('pid', 'pid (the pixel id) is required');
  const limit = parseLimit(req.query, EVENTS_MAX_LIMIT, EVENTS_DEFAULT_LIMIT);
  const pixel = await findPixel(deps.pool, account.id, pid);
  if (pixel === undefined) throw notFound(`no pixel ${pid} in this account`);
  return { data: sampledEvents(pixel, deps.now(), limit, account.currency), sampled: true };
}

/** POST /conversions/event_settings: its source pixels must be the account's. */
async function createEventSetting(deps: ConversionRouteDeps, req: EventSettingRequest, reply: FastifyReply) {
  refuseQuery(req.query);
  checkCustomEventName(req.body);
  const accountId = requestAccount(req).id;
  return answerMutation(deps.pool, req, reply, req.body, async (client) => {
    await checkSourceIds(client, accountId, req.body.source_ids);
    const setting = await insertEventSetting(client, {
      id: newId('evs'),
      accountId,
      name: req.body.name,
      eventType: req.body.event_type,
      customEventName: req.body.custom_event_name ?? null,
      attributionWindowDays: req.body.attribution_window_days,
      sourceIds: req.body.source_ids,
    });
    return { status: 201, body: eventSettingJson(setting) };
  });
}

/** POST /conversions/insights: conversions attributed to the account's ads. */
async function insights(deps: ConversionRouteDeps, req: InsightsRequest) {
  const { pool } = deps;
  const account = requestAccount(req);
  refuseQuery(req.query);
  const [ads, campaignIds, adGroupIds] = await Promise.all([
    listAdRefs(pool, account.id),
    listCampaignIds(pool, account.id),
    listAdGroupIds(pool, account.id),
  ]);
  return conversionInsights(
    req.body,
    { accountId: account.id, ads, campaignIds, adGroupIds },
    localTime(deps.now(), account.timeZone),
    { currency: account.currency, timeZone: account.timeZone },
  );
}
