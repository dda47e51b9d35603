/** Reading the workspace's marketing context, and building literal ad variations from parts. */
import { MarketingService } from '@adsmcp/proto/marketing/v1/marketing_pb';
import { VariationService } from '@adsmcp/proto/marketing/v1/variations_pb';
import type { GatewayDeps } from '../../deps.ts';
import type { ToolRow } from '../catalogue.ts';
import { inputFromRequest } from '../input-schema.ts';

const contextInput = inputFromRequest(MarketingService.method.getMarketingContext.input, {
  brief_id: { description: 'A saved brief (kind brief) to include, with the items its reference_ids name.' },
  offset: { description: 'Items to skip; next_offset of the previous page.' },
  limit: { description: 'Page size; default 20.' },
});

export const getMarketingContext: ToolRow<GatewayDeps> = {
  name: 'ads_get_marketing_context',
  title: 'Get marketing context',
  group: 'Marketing',
  behavior: 'read',
  features: [],
  description:
    'Returns the workspace’s saved guidance (playbook items) and brand voice profiles (brand items) that are not ' +
    'archived, playbooks first, then brands, most recently updated first within each; paginated with total and ' +
    'next_offset (pass it as offset for the next page; null on the last page). With brief_id, also returns that ' +
    'brief (archived ones too, flagged archived) and references: every entry of its reference_ids, in order, with status ' +
    'found, archived (the item is returned, flagged archived) or missing (no such item in the workspace). A ' +
    'brief_id that is not a brief is refused. It only reads what the workspace saved: no model is called.',
  input: contextInput,
  example: { brief_id: '8c0d2e43-2f1a-4b7e-8f57-6a3b9e0c1d24', offset: 20, limit: 20 },
  route: {
    kind: 'rpc',
    method: MarketingService.method.getMarketingContext,
  },
};

const variationsInput = inputFromRequest(VariationService.method.buildVariations.input, {
  titles: { description: 'Ad titles, 3 to 50 characters.', items: { nonBlank: true } },
  bodies: { description: 'Ad bodies, up to 100 characters.' },
  image_urls: { items: { format: 'https-uri', description: 'An image (https, up to 2048).' } },
  target_urls: { items: { format: 'https-uri', description: 'A landing page (https, up to 2048).' } },
});

export const buildVariationsTool: ToolRow<GatewayDeps> = {
  name: 'ads_build_variations',
  title: 'Build ad variations',
  group: 'Marketing',
  behavior: 'read',
  features: [],
  description:
    'Combines the given parts literally: every title × body × image_url × target_url, titles varying slowest and ' +
    'target URLs fastest, so the same parts always give the same order. Nothing is written or generated and no ' +
    'model is called. More than 100 combinations is refused with how many there would be. Each ' +
    'variation has the fields of a batch variant (title, body, source_image_url, target_url), ready to save as ' +
    'a batch item with ads_save_marketing_item.',
  input: variationsInput,
  example: {
    titles: ['Two for one', 'Spring plants'],
    bodies: ['Every plant, this week only.'],
    image_urls: ['https://cdn.example/spring.png'],
    target_urls: ['https://shop.example/spring'],
  },
  idempotent: true,
  // The marketing service combines the parts and holds them to their rules, for every caller.
  route: { kind: 'rpc', method: VariationService.method.buildVariations },
};

export const marketingContextTools: readonly ToolRow<GatewayDeps>[] = [
  getMarketingContext,
  buildVariationsTool,
];
