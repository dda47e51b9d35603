/** The platform's geo lookup: search DMA and standard region codes for targeting. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { countChars, hasContent, refuseUnknownParameters } from '../ad-requests.ts';
import { invalidRequest } from '../errors.ts';
import { searchGeoTargets } from '../geo/geo-lookup.ts';
import { parseLimit, type RawQuery, single } from '../paging.ts';
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
  return { q, limit: parseLimit(query, MAX_LIMIT, DEFAULT_LIMIT) };
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
