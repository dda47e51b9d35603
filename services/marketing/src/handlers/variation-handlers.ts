/** VariationService: proto <-> domain for literal ad variations (domain/variations.ts). */
import type { VariationService } from '@adsmcp/proto/marketing/v1/variations_pb';
import type { ServiceImpl } from '@connectrpc/connect';
import { buildVariations, checkParts } from '../domain/variations.ts';

type Impl = ServiceImpl<typeof VariationService>;
type Req<K extends keyof Impl> = Parameters<Impl[K]>[0];
type Res<K extends keyof Impl> = Promise<Awaited<ReturnType<Impl[K]>>>;

/** createVariationHandlers builds the VariationService implementation; it needs nothing stored. */
export function createVariationHandlers(): Impl {
  return {
    buildVariations: (req) => buildVariationsRpc(req),
  };
}

async function buildVariationsRpc(req: Req<'buildVariations'>): Res<'buildVariations'> {
  const parts = {
    titles: req.titles,
    bodies: req.bodies,
    image_urls: req.imageUrls,
    target_urls: req.targetUrls,
  };
  checkParts(parts);
  const variations = buildVariations(parts).map((v) => ({
    title: v.title,
    body: v.body,
    sourceImageUrl: v.source_image_url,
    targetUrl: v.target_url,
  }));
  return { variations, count: variations.length };
}
