/** Marketing items and the other workspace records the marketing service keeps. */
import { MarketingService } from '@adsmcp/proto/marketing/v1/marketing_pb';
import type { GatewayDeps } from '../../deps.ts';
import type { ToolRow } from '../catalogue.ts';
import { inputFromRequest } from '../input-schema.ts';
import { anyOf, array, dependentField, enumOf, object, string } from '../schema.ts';

const EXPECTED_REVISION_TEXT =
  'The revision the item is at now (from ads_get_marketing_item or the last save).';
/** Free text; long-form text (1000 characters or more) may have line breaks and tabs. */
const text = (max: number, description?: string) =>
  string({ max, multiline: max >= 1000, ...(description ? { description } : {}) });
const httpsUrl = (description?: string) =>
  string({ max: 2048, format: 'https-uri', ...(description ? { description } : {}) });
const uuid = (description?: string) => string({ format: 'uuid', ...(description ? { description } : {}) });

// The six shapes of `data`, one per kind: checked here only; the marketing service stores data as it arrives.
const voiceProfile = object(
  {
    voice: text(5000, 'How the brand sounds.'),
    audience: text(5000, 'Who it speaks to.'),
    approved_claims: text(5000, 'Claims the brand may make.'),
    restrictions: text(5000, 'What it must not say or do.'),
    website: httpsUrl(),
  },
  ['voice', 'audience', 'approved_claims', 'restrictions'],
  'Voice profile: the data of a brand item.',
);

const brief = object(
  {
    product: text(5000),
    audience: text(5000),
    offer: text(5000),
    objective: text(5000),
    landing_page: httpsUrl(),
    constraints: text(5000),
    reference_ids: array(uuid(), {
      max: 50,
      unique: true,
      description: 'Other saved items this brief refers to, each once.',
    }),
  },
  ['product', 'audience', 'offer', 'objective', 'landing_page', 'constraints'],
  'Brief: the data of a brief item.',
);

const guidance = object(
  {
    guidance: string({ min: 1, max: 20000, multiline: true }),
    evidence: enumOf(['general_guidance', 'account_results', 'hypothesis'], 'What the guidance rests on.'),
    source_url: httpsUrl(),
  },
  ['guidance', 'evidence'],
  'Guidance: the data of a playbook item.',
);

const observedExample = object(
  {
    brand: string({ min: 1, max: 200, nonBlank: true, description: 'Whose ad it is.' }),
    source_url: httpsUrl('Where it was seen.'),
    observed_at: string({ format: 'date-time' }),
    status: enumOf(['observed', 'no_longer_observed']),
    copy: text(5000),
    industry: text(200),
    format: text(100),
    hook: text(500),
    offer: text(500),
    notes: text(5000),
  },
  ['brand', 'source_url', 'observed_at', 'status', 'copy'],
  'Observed example: the data of an inspiration item.',
);

const batchVariant = object(
  {
    // The ad's title: it needs something to read, as ads_build_variations and the prepare require.
    title: string({ min: 3, max: 50, nonBlank: true }),
    // An ad may have no body text: empty or blank is allowed, as the prepare allows it.
    body: text(100),
    target_url: httpsUrl(),
    source_image_url: httpsUrl(),
    hook: text(200),
    offer: text(200),
  },
  ['title', 'body', 'target_url', 'source_image_url'],
);

const batch = object(
  {
    variants: array(batchVariant, { min: 1, max: 100 }),
    brief_id: uuid('The brief the variants were written for.'),
  },
  ['variants'],
  'Batch of ad variants: the data of a batch item.',
);

const creativeLabel = object(
  {
    account_id: uuid('The ad account (from ads_list_accounts).'),
    ad_id: string({ min: 1, max: 255, nonBlank: true }),
    hook: text(200),
    offer: text(200),
    brief_id: uuid(),
    notes: text(5000),
  },
  ['account_id', 'ad_id', 'hook', 'offer'],
  'Creative label: the data of a creative item, describing a live ad.',
);

const SHAPE_BY_KIND = {
  brand: voiceProfile,
  brief,
  playbook: guidance,
  inspiration: observedExample,
  batch,
  creative: creativeLabel,
};

const itemData = anyOf(
  {
    'voice profile (kind brand)': voiceProfile,
    'brief (kind brief)': brief,
    'guidance (kind playbook)': guidance,
    'observed example (kind inspiration)': observedExample,
    'batch (kind batch)': batch,
    'creative label (kind creative)': creativeLabel,
  },
  'The content of the item, in the shape its kind requires (see the tool description).',
);

const SHAPES_DESCRIBED =
  '`data` must have the shape for `kind` (no other properties; text limits in characters; URLs are https, at most 2048):\n' +
  '- brand → voice profile: voice, audience, approved_claims, restrictions (each text up to 5000); optional website.\n' +
  '- brief → brief: product, audience, offer, objective, constraints (each up to 5000), landing_page (URL); optional reference_ids (up to 50 item UUIDs, each once).\n' +
  '- playbook → guidance: guidance (1 to 20000), evidence (general_guidance, account_results or hypothesis); optional source_url.\n' +
  '- inspiration → observed example: brand (1 to 200), source_url, observed_at (RFC 3339 date-time), status (observed or no_longer_observed), copy (up to 5000); optional industry (200), format (100), hook (500), offer (500), notes (5000).\n' +
  '- batch → batch: variants (1 to 100, each title 3 to 50 with a visible character, body up to 100, target_url, source_image_url; optional hook, offer up to 200); optional brief_id (UUID).\n' +
  '- creative → creative label: account_id (UUID), ad_id (1 to 255, with a visible character), hook, offer (each up to 200); optional brief_id (UUID), notes (5000).';

const listInput = inputFromRequest(MarketingService.method.listMarketingItems.input, {
  kind: { description: 'Only items of this kind.' },
  query: { description: 'Text to find, ignoring case, in the name or the text of the data.' },
  collection: { description: 'Only items in this collection (exact); "" for items in none.' },
  tag: { description: 'Only items with this tag (exact).' },
  offset: { description: 'Items to skip; next_offset of the previous page.' },
  limit: { description: 'Page size; default 20.' },
});

const listMarketingItems: ToolRow<GatewayDeps> = {
  name: 'ads_list_marketing_items',
  title: 'List marketing items',
  group: 'Marketing',
  behavior: 'read',
  features: [],
  description:
    'Lists the workspace’s saved marketing items (brand voice profiles, briefs, playbooks, inspiration, variant ' +
    'batches, creative labels) that are not archived, most recently updated first, with their data and revision. ' +
    'Filters combine: kind, query, collection, tag. Returns items, total (matches across all pages) and ' +
    'next_offset (pass it as offset for the next page; null on the last page).',
  input: listInput,
  example: { kind: 'brief', query: 'monstera', collection: 'Spring', tag: 'plants', offset: 20, limit: 20 },
  route: {
    kind: 'rpc',
    method: MarketingService.method.listMarketingItems,
  },
};

const getInput = inputFromRequest(MarketingService.method.getMarketingItem.input, {
  item_id: { description: 'The item to read.' },
});

const getMarketingItem: ToolRow<GatewayDeps> = {
  name: 'ads_get_marketing_item',
  title: 'Get a marketing item',
  group: 'Marketing',
  behavior: 'read',
  features: [],
  description:
    'Returns one saved marketing item of the workspace with its data and its current revision (pass it as ' +
    'expected_revision to update or archive the item). Archived items are returned too, with archived true.',
  input: getInput,
  example: { item_id: '0b0e4b6a-6a0e-4d8e-9c61-3c1f0f7b8a11' },
  route: {
    kind: 'rpc',
    method: MarketingService.method.getMarketingItem,
  },
};

const saveInput = dependentField(
  inputFromRequest(MarketingService.method.saveMarketingItem.input, {
    item_id: { description: 'The item to update; omit it (or give a new UUID) to create one.' },
    expected_revision: { description: EXPECTED_REVISION_TEXT },
    kind: { description: 'What the item is; it decides the shape of data.' },
    name: { nonBlank: true },
    collection: { description: 'A collection to group items in; omitted means none.' },
    tags: {
      items: { nonBlank: true },
      description: 'Labels to find the item by (ads_list_marketing_items tag), each once.',
    },
    // The request carries data as any JSON object (a Struct): its shape per kind is the tool's.
    data: itemData,
  }),
  { field: 'data', on: 'kind', cases: SHAPE_BY_KIND },
);

const saveMarketingItem: ToolRow<GatewayDeps> = {
  name: 'ads_save_marketing_item',
  title: 'Save a marketing item',
  group: 'Marketing',
  behavior: 'write',
  features: [],
  description:
    'Creates or updates a saved marketing item of the workspace. It stores only what is supplied, locally: ' +
    'nothing changes in any ad account. To create, omit item_id and expected_revision; the item starts at ' +
    'revision 1. To update, give item_id and expected_revision, the revision the item is at now: the whole item ' +
    '(name, collection, tags, data) is replaced and its revision grows by one. A stale expected_revision is ' +
    'refused with the current revision (error code stale_revision): read the item again and retry. The kind of ' +
    `an item cannot change, and an archived item cannot be updated.\n${SHAPES_DESCRIBED}`,
  input: saveInput,
  example: {
    item_id: '0b0e4b6a-6a0e-4d8e-9c61-3c1f0f7b8a11',
    expected_revision: 3,
    kind: 'batch',
    name: 'Spring variants',
    collection: 'Spring',
    tags: ['spring', 'plants'],
    data: {
      brief_id: '8c0d2e43-2f1a-4b7e-8f57-6a3b9e0c1d24',
      variants: [
        {
          title: 'Two for one',
          body: 'Every plant, this week only.',
          target_url: 'https://shop.example/spring',
          source_image_url: 'https://cdn.example/spring.png',
          hook: 'Spring',
        },
      ],
    },
  },
  route: {
    kind: 'rpc',
    method: MarketingService.method.saveMarketingItem,
  },
};

const archiveInput = inputFromRequest(MarketingService.method.archiveMarketingItem.input, {
  item_id: { description: 'The item to archive.' },
  // Left out, the service answers with the item's current revision; the tool asks for it.
  expected_revision: { required: true, description: EXPECTED_REVISION_TEXT },
});

const archiveMarketingItem: ToolRow<GatewayDeps> = {
  name: 'ads_archive_marketing_item',
  title: 'Archive a marketing item',
  group: 'Marketing',
  behavior: 'write',
  features: [],
  description:
    'Archives a saved marketing item of the workspace, locally: it is no longer listed and can no longer be ' +
    'updated, but can still be read. Live ads and uploaded creatives are not affected. expected_revision must be ' +
    'the revision the item is at now; a stale one is refused with the current revision (error code stale_revision).',
  input: archiveInput,
  destructive: true,
  example: { item_id: '0b0e4b6a-6a0e-4d8e-9c61-3c1f0f7b8a11', expected_revision: 4 },
  route: {
    kind: 'rpc',
    method: MarketingService.method.archiveMarketingItem,
  },
};

export const marketingTools: readonly ToolRow<GatewayDeps>[] = [
  listMarketingItems,
  getMarketingItem,
  saveMarketingItem,
  archiveMarketingItem,
];
