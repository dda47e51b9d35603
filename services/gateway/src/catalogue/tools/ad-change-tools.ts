/**
 * The prepare tools of an ad (update, archive). The update's body, and the rules of an ad
 * creative's fields, are the runtime's platform bodies (`platform-bodies.ts`), which the changes
 * service holds every prepared change to. The changes service reads the live ad, checks the ad the
 * update would produce and records the exact operation; nothing reaches the ad account until a
 * person approves the change and ads_apply_change applies it.
 */
import { adUpdateBody } from '@adsmcp/runtime/platform-bodies';
import type { GatewayDeps } from '../../deps.ts';
import type { ToolRow } from '../catalogue.ts';
import { object } from '../schema.ts';
import { accountId, platformId } from './platform-arguments.ts';

const OBJECT_ID = platformId();

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
