/** Campaign image assets, kept by the marketing service; their images are served by delivery links. */
import {
  AssetService,
  type SaveCampaignAssetResponse,
  SaveCampaignAssetResponseSchema,
} from '@adsmcp/proto/marketing/v1/assets_pb';
import type { GatewayDeps } from '../../deps.ts';
import type { ToolRow } from '../catalogue.ts';
import { inputFromRequest } from '../input-schema.ts';
import { messageSchema } from '../output-schema.ts';
import { resultOf } from '../rpc-mapping.ts';
import { type Issue, type Schema, string } from '../schema.ts';
import { ACCOUNT_ID_TEXT, EXAMPLE_ACCOUNT } from './platform-arguments.ts';

const GROUP = 'Campaign support';
/** Base64 of 1 MiB, the largest image: 4 characters for every 3 bytes, padded. */
const BASE64_MAX = 1_398_104;
/** Standard base64 (RFC 4648 section 4) with its padding: no line breaks, no URL-safe letters. */
const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const EXAMPLE_ASSET = '5a7c1e2b-9d3f-4b6a-8e1c-2f4d6b8a0c13';

/**
 * `base` with exactly one of `fields` present. The published schema stays `base`'s (a plain object
 * schema, which every client understands); the tool description says which fields exclude each other.
 */
function exactlyOneOf<T>(base: Schema<T>, fields: readonly [string, string]): Schema<T> {
  return {
    json: base.json,
    check(value, path, out: Issue[]) {
      base.check(value, path, out);
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return;
      const rec = value as Record<string, unknown>;
      const present = fields.filter((f) => rec[f] !== undefined);
      if (present.length === 1) return;
      out.push({
        path: present.length === 0 ? fields[0] : fields[1],
        message: `send exactly one of \`${fields[0]}\` (the image) and \`${fields[1]}\` (where to fetch it); got ${present.length === 0 ? 'neither' : 'both'}`,
      });
    },
  };
}

const saveInput = exactlyOneOf(
  inputFromRequest(AssetService.method.saveCampaignAsset.input, {
    account_id: { description: ACCOUNT_ID_TEXT },
    name: { nonBlank: true, description: 'What the image is, for people.' },
    // Bytes in the request, whose rules the rule set cannot state: the tool bounds the base64 text.
    content_base64: string({
      min: 1,
      max: BASE64_MAX,
      pattern: STRICT_BASE64,
      patternHint:
        'standard base64 (A-Z, a-z, 0-9, + and /, padded with = to a multiple of 4; no line breaks)',
      description:
        'The image itself, PNG or JPEG, at most 1 MiB, as standard base64. Omit when giving source_url.',
    }),
    source_url: {
      format: 'https-uri',
      description:
        'A public https URL to fetch the image from (at most 1 MiB). Loopback, private and other internal ' +
        'addresses are refused. Omit when giving content_base64.',
    },
    mime_type: {
      description: 'What you believe the type is; the bytes decide, and a mismatch is reported in warnings.',
    },
  }),
  ['content_base64', 'source_url'],
);

const SAVE_OUTPUT = (() => {
  const base = messageSchema(SaveCampaignAssetResponseSchema) as {
    properties: Record<string, unknown>;
    required: string[];
  };
  return {
    ...base,
    properties: {
      ...base.properties,
      delivery_url: {
        type: ['string', 'null'],
        description: 'A temporary link to the stored image, for a person to review it.',
      },
      delivery_expires_at: { type: ['string', 'null'], description: 'When delivery_url stops working.' },
    },
    required: [...base.required, 'delivery_url', 'delivery_expires_at'],
  };
})();

const saveCampaignAsset: ToolRow<GatewayDeps> = {
  name: 'ads_save_campaign_asset',
  title: 'Save a campaign image asset',
  group: GROUP,
  behavior: 'write',
  features: [],
  description:
    'Saves a PNG or JPEG image as a campaign asset of an ad account, locally; nothing is uploaded to the ad ' +
    'account: an asset is uploaded only by a reviewed change that puts it on an ad (an optimization variant’s ' +
    'asset_id), when that change is applied. Give exactly one of content_base64 (the ' +
    'image, standard base64, at most 1,398,104 characters) or source_url (a public https URL; the fetch is ' +
    'protected against request forgery: internal addresses are refused). The type is found from the bytes, ' +
    'whatever mime_type says (a mismatch is reported in warnings); only PNG and JPEG, at most 1 MiB, 80 to 4096 ' +
    'pixels per side after the EXIF orientation. The image is stored upright and re-encoded, without its metadata ' +
    '(EXIF, GPS position, ICC, XMP). Returns the asset (revision 1, width, height, sha256 of the stored bytes) and ' +
    'delivery_url, a link to the stored image that works for a few minutes, for a person to review it; ' +
    'ads_list_campaign_assets never returns links or image content.',
  input: saveInput,
  output: SAVE_OUTPUT,
  openWorld: true,
  example: {
    account_id: EXAMPLE_ACCOUNT,
    name: 'Spring hero image',
    source_url: 'https://cdn.example/spring-hero.png',
    mime_type: 'image/png',
  },
  route: {
    kind: 'rpc',
    method: AssetService.method.saveCampaignAsset,
    account: 'account_id',
    view: (res, { caller, deps }) => {
      const saved = res as SaveCampaignAssetResponse;
      const link =
        saved.asset === undefined
          ? undefined
          : deps.assetLinks?.link(caller.principal.workspaceId, saved.asset.assetId);
      return {
        ...resultOf(SaveCampaignAssetResponseSchema, saved),
        delivery_url: link?.url ?? null,
        delivery_expires_at: link?.expiresAt.toISOString() ?? null,
      };
    },
  },
};

const listCampaignAssets: ToolRow<GatewayDeps> = {
  name: 'ads_list_campaign_assets',
  title: 'List campaign image assets',
  group: GROUP,
  behavior: 'read',
  features: [],
  description:
    'Lists the saved image assets of an ad account that are not archived, newest first: name, type, width, ' +
    'height, size, sha256 and revision (pass it as expected_revision to archive). No image content and no ' +
    'delivery links. Returns total (across all pages) and next_offset (pass it as offset; null on the last page).',
  input: inputFromRequest(AssetService.method.listCampaignAssets.input, {
    account_id: { description: ACCOUNT_ID_TEXT },
    limit: { description: 'Page size; 20 when omitted.' },
    offset: { description: 'Assets to skip; next_offset of the previous page.' },
  }),
  example: { account_id: EXAMPLE_ACCOUNT, limit: 20, offset: 0 },
  route: {
    kind: 'rpc',
    method: AssetService.method.listCampaignAssets,
    account: 'account_id',
  },
};

const archiveCampaignAsset: ToolRow<GatewayDeps> = {
  name: 'ads_archive_campaign_asset',
  title: 'Archive a campaign image asset',
  group: GROUP,
  behavior: 'write',
  features: [],
  description:
    'Archives a saved image asset, locally: it is no longer listed, and every delivery link to it stops working ' +
    'at once. Live ads and creatives already uploaded are not affected. expected_revision must be the revision ' +
    'the asset is at now; a stale one is refused with the current revision (error code stale_revision).',
  input: inputFromRequest(AssetService.method.archiveCampaignAsset.input, {
    asset_id: { description: 'The asset to archive (from ads_list_campaign_assets).' },
    // Left out, the service answers with the asset's current revision; the tool asks for it.
    expected_revision: {
      required: true,
      description: 'The revision the asset is at now (from ads_list_campaign_assets or the save).',
    },
  }),
  destructive: true,
  example: { asset_id: EXAMPLE_ASSET, expected_revision: 1 },
  route: {
    kind: 'rpc',
    method: AssetService.method.archiveCampaignAsset,
  },
};

export const assetTools: readonly ToolRow<GatewayDeps>[] = [
  listCampaignAssets,
  saveCampaignAsset,
  archiveCampaignAsset,
];
