/** The platform's geo lookup: search DMA and standard region codes for targeting. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { countChars, hasContent, refuseUnknownParameters } from '../ad-requests.ts';
import { invalidRequest } from '../errors.ts';
import { searchGeoTargets } from '../geo/geo-lookup.ts';
import { type RawQuery, single } from '../paging.ts';
import { requestAccount } from '../platform.ts';

const DEFAULT_LIMIT = 10;
const MAX_LIMIT = 100;
const MAX_QUERY_CHARS = 200;

function parseSearchQuery(query: RawQuery): { q: string; limit: number } {
  refuseUnknownParameters(query, ['q', 'limit']);
  const q = single(query, 'q');
  if (q === undefined) throw invalidRequest('q', 'q is required');
  if (countChars(q) < 1 || countChars(q) > MAX_QUERY_CHARS) {
    throw invalidRequest('q', `q must be 1 to ${MAX_QUERY_CHARS} characters`);
  }
  if (!hasContent(q)) throw invalidRequest('q', 'q must contain a non-whitespace character');
  const raw = single(query, 'limit');
  let limit = DEFAULT_LIMIT;
  if (raw !== undefined) {
    limit = /^[0-9]{1,4}$/.test(raw) ? Number(raw) : Number.NaN;
    if (!(limit >= 1 && limit <= MAX_LIMIT)) {
      throw invalidRequest('limit', `limit must be an integer from 1 to ${MAX_LIMIT}; got "${raw}"`);
    }
  }
  return { q, limit };
}

/** registerGeoRoutes adds `GET /geo_lookup/search` to `app`. */
export function registerGeoRoutes(
  app: FastifyInstance,
  deps: { guard: (req: FastifyRequest) => Promise<void> },
): void {
  app.get<{ Querystring: RawQuery }>('/geo_lookup/search', { onRequest: deps.guard }, async (req) => {
    requestAccount(req);
    const { q, limit } = parseSearchQuery(req.query);
    return { data: searchGeoTargets(q, limit) };
  });
}
