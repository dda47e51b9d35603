/**
 * The prepare tools of an ad (update, archive) and the rules of an ad creative's fields, which the
 * other tools that take a creative share. The changes service reads the live ad, checks the ad the
 * update would produce and records the exact operation; nothing reaches the ad account until a
 * person approves the change and ads_apply_change applies it.
 */
import type { GatewayDeps } from '../../deps.ts';
import type { ToolRow } from '../catalogue.ts';
import { enumOf, nullable, number, object, string } from '../schema.ts';
import { accountId, platformId } from './platform-arguments.ts';

const OBJECT_ID = platformId();

/** The rules of an ad creative's fields, shared by every tool that takes a creative. */
export const creativeFields = {
  type: enumOf(['chat_card', 'product_ad_template']),
  title: string({ min: 1, max: 50, nonBlank: true }),
  body: string({ max: 100 }),
  price: string({ max: 100 }),
  target_url: string({ max: 2048, format: 'http-uri' }),
  file_id: string({ min: 1, max: 255 }),
  image_crop: object(
    {
      x: number({ min: 0, max: 1 }),
      y: number({ min: 0, max: 1 }),
      width: number({ min: 0, max: 1 }),
      height: number({ min: 0, max: 1 }),
    },
    ['x', 'y', 'width', 'height'],
    'A square crop of the EXIF-oriented source image, as fractions of its width and height: square in pixels, so ' +
      'width × image width equals height × image height (on a 300 × 100 image, width 1/3 and height 1); chat_card ' +
      'only; needs an image (file_id, or asset_id where a tool takes one).',
  ),
};

const creative = object({
  ...creativeFields,
  file_id: string({
    min: 1,
    max: 255,
    description:
      'An image file the ad account has (as an ad’s creative.file_id shows it); one it does not have is refused.',
  }),
  asset_id: string({
    format: 'uuid',
    description:
      'A saved campaign image of this ad account (ads_save_campaign_asset) instead of file_id: pinned when the ' +
      'change is prepared, shown to the reviewer, and uploaded to the ad platform only when the approved change is ' +
      'applied, then sent as its file_id. Not with file_id.',
  }),
});

const adUpdateBody = object(
  {
    name: string({ min: 3, max: 1000, nonBlank: true }),
    creative,
    status: enumOf(['active', 'paused', 'archived']),
    landing_page_configuration: nullable(
      object({ query_string_template: string({ max: 2048 }) }, ['query_string_template']),
    ),
  },
  [],
  'The fields to change; fields left out keep their value.',
);

const updateAdInput = object({ account_id: accountId, ad_id: OBJECT_ID, body: adUpdateBody }, [
  'account_id',
  'ad_id',
  'body',
]);

export const updateAd: ToolRow<GatewayDeps> = {
  name: 'ads_update_ad',
  title: 'Prepare an ad update',
  group: 'Campaign creation',
  behavior: 'prepare',
  features: [],
  description:
    'Prepares an update of an ad (name, creative, status, landing page configuration) and returns a change_id. ' +
    'The fields given replace the live ones (creative fields one by one); the ad that would result is checked ' +
    '(an image_crop only on a chat_card with an image, square and within the image), and a change that would ' +
    'change nothing is refused. A new image is named by creative.file_id, a file the ad account must have, or ' +
    'by creative.asset_id, a saved campaign asset of the account, whose image is pinned with the change (its ' +
    'sha256 is part of the digest) and uploaded only when the approved change is applied. Nothing changes on the ' +
    'ad account until a person approves the change in the dashboard and ads_apply_change applies it. ' +
    'Upstream: POST /ads/{ad_id}.',
  input: updateAdInput,
  example: {
    account_id: '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90',
    ad_id: 'ad_0123456789abcdef',
    body: {
      name: 'Spring Sale — chat card',
      status: 'paused',
      creative: { title: 'Two plants for one', target_url: 'https://shop.example.com/spring' },
      landing_page_configuration: null,
    },
  },
  route: {
    kind: 'prepare',
    object: 'ad',
    effect: 'update',
    operation: { method: 'POST', path: '/ads/{ad_id}' },
    target: '/ads/{ad_id}',
    body: 'body',
  },
};

const archiveAdInput = object({ account_id: accountId, ad_id: OBJECT_ID }, ['account_id', 'ad_id']);

export const archiveAd: ToolRow<GatewayDeps> = {
  name: 'ads_archive_ad',
  title: 'Prepare archiving an ad',
  group: 'Campaign creation',
  behavior: 'prepare',
  features: [],
  description:
    'Prepares archiving an ad and returns a change_id. The ad keeps serving until a person approves the change and ' +
    'ads_apply_change applies it. Upstream: POST /ads/{ad_id}/archive.',
  input: archiveAdInput,
  example: { account_id: '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90', ad_id: 'ad_0123456789abcdef' },
  destructive: true,
  route: {
    kind: 'prepare',
    object: 'ad',
    effect: 'archive',
    operation: { method: 'POST', path: '/ads/{ad_id}/archive' },
    target: '/ads/{ad_id}',
  },
};
