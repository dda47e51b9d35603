/**
 * Geo lookup: search the US designated market areas (DMA) and the standard region codes
 * (ISO 3166-2 subdivisions, from the `iso-3166` package) by code or name.
 */
import { iso31662 } from 'iso-3166';
import { US_DMA_MARKETS } from './us-dma-markets.ts';

export interface GeoTarget {
  code: string;
  name: string;
  type: 'dma' | 'region';
  /** ISO 3166-1 alpha-2 code of the target's country. */
  country: string;
}

interface Indexed {
  target: GeoTarget;
  code: string;
  name: string;
}

/** Case- and accent-insensitive form for matching ("Zürich" and "zurich" match). */
export function fold(s: string): string {
  return s.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase().trim();
}

const INDEX: readonly Indexed[] = [
  ...US_DMA_MARKETS.map(([code, name]) => ({ code, name, type: 'dma' as const, country: 'US' })),
  ...iso31662.map((r) => ({
    code: r.code,
    name: r.name,
    type: 'region' as const,
    country: r.code.slice(0, r.code.indexOf('-')),
  })),
].map((target) => ({ target, code: fold(target.code), name: fold(target.name) }));

/** How well an entry matches the folded query; lower is better, undefined is no match. */
function rank(e: Indexed, q: string): number | undefined {
  if (e.code === q) return 0;
  if (e.name === q) return 1;
  if (e.code.startsWith(q) || e.name.startsWith(q)) return 2;
  if (e.name.split(/[^\p{L}\p{N}]+/u).some((word) => word.startsWith(q))) return 3;
  if (e.name.includes(q)) return 4;
  return undefined;
}

/**
 * searchGeoTargets returns up to `limit` targets whose code or name matches `query`: exact
 * codes first, then exact names, prefixes, word prefixes and substrings; ties by name and code.
 */
export function searchGeoTargets(query: string, limit: number): GeoTarget[] {
  const q = fold(query);
  const hits: { e: Indexed; r: number }[] = [];
  for (const e of INDEX) {
    const r = rank(e, q);
    if (r !== undefined) hits.push({ e, r });
  }
  hits.sort(
    (a, b) =>
      a.r - b.r ||
      a.e.target.name.localeCompare(b.e.target.name, 'en') ||
      a.e.target.code.localeCompare(b.e.target.code, 'en'),
  );
  return hits.slice(0, limit).map((h) => h.e.target);
}
