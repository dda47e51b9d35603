/** Ads, ad groups and their insights (upstream reads) and the prepare tools for them. */
import type { GatewayDeps } from '../../deps.ts';
import type { ToolRow } from '../catalogue.ts';
import { object, string } from '../schema.ts';
import { accountId, listPaging, platformId, servingIssues } from './platform-arguments.ts';

const include = servingIssues('ad');

const getAdInput = object(
  {
    account_id: accountId,
    ad_id: platformId('The ad, as the platform identifies it (ads_list_ads lists them).'),
    include,
  },
  ['account_id', 'ad_id'],
);

export const getAd: ToolRow<GatewayDeps> = {
  name: 'ads_get_ad',
  title: 'Get ad',
  group: 'Accounts and reporting',
  behavior: 'read',
  features: [],
  description:
    'Reads one ad of an ad account from the ad platform (upstream GET /ads/{ad_id}): its name, status, creative, ' +
    'ad group and other fields as the platform reports them, in `ad`. include: ["serving_issues"] adds why the ad ' +
    'is not serving, if it is not. Changes nothing.',
  input: getAdInput,
  example: {
    account_id: '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90',
    ad_id: 'ad_0123456789abcdef',
    include: ['serving_issues'],
  },
  route: {
    kind: 'upstream-read',
    path: '/ads/{ad_id}',
    shape: 'get',
    result: 'ad',
    notFound: "no ad {ad_id} in ad account {account_id}; ads_list_ads lists the account's ads",
  },
};

const listAdsInput = object(
  {
    account_id: accountId,
    include,
    ad_group_id: platformId('Only the ads of this ad group.'),
    name: string({
      min: 3,
      max: 1000,
      nonBlank: true,
      description: 'Only the ads whose name contains this text (the platform ignores case).',
    }),
    ...listPaging(500),
  },
  ['account_id'],
);

export const listAds: ToolRow<GatewayDeps> = {
  name: 'ads_list_ads',
  title: 'List ads',
  group: 'Accounts and reporting',
  behavior: 'read',
  features: [],
  description:
    'Lists the ads of an ad account from the ad platform (upstream GET /ads), one page at a time: `ads` and ' +
    '`paging` {after, before, has_more}. Filter by ad_group_id or by name (part of it); include: ["serving_issues"] adds why ' +
    'each ad is not serving. To page forward pass paging.after as `after` while has_more is true; to page back ' +
    'pass paging.before as `before` (one cursor at a time). `order` is asc (oldest first, the default) or desc. ' +
    'The specification leaves the arguments after `after` open; `before` and `order` are the cursor and sort ' +
    'arguments of the other list tools. Changes nothing.',
  input: listAdsInput,
  example: {
    account_id: '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90',
    include: ['serving_issues'],
    ad_group_id: 'adg_0123456789abcdef',
    name: 'Spring',
    limit: 50,
    after: 'c2VxOjEy',
    order: 'desc',
  },
  route: {
    kind: 'upstream-read',
    path: '/ads',
    shape: 'list',
    result: 'ads',
    notFound: 'the ad platform found no ads listing for ad account {account_id}; check ad_group_id',
  },
};

export const adTools: readonly ToolRow<GatewayDeps>[] = [getAd, listAds];
