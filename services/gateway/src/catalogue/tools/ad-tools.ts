/** Ads, ad groups and their insights (upstream reads) and the prepare tools for them. */
import { type GatewayDeps, onBehalfOf } from '../../deps.ts';
import { ToolFailure } from '../../mcp/tool-call.ts';
import { type Caller, defineTool, type ToolDefinition } from '../catalogue.ts';
import { array, enumOf, integer, object, string } from '../schema.ts';

const CALL_RPC = 'upstream.v1.UpstreamService/Call';

const accountId = string({
  format: 'uuid',
  description: 'The ad account: an account_id from ads_list_accounts.',
});
const include = array(enumOf(['serving_issues']), {
  max: 1,
  unique: true,
  description: 'Extra detail to include: serving_issues (why the ad is not serving, if it is not).',
});

/** One GET to the ad platform for an account of the caller's workspace. */
interface PlatformRead {
  accountId: string;
  path: string;
  query: Record<string, string | number | readonly string[] | undefined>;
  /** What a 404 means for this read, said to the agent. */
  notFound: string;
}

const PLATFORM_CODE = /^[a-z][a-z0-9_]{0,63}$/;
const MAX_PLATFORM_MESSAGE = 500;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The platform's `{"error": {"code", "message", "field"}}`, read as untrusted text: a code only
 * when it looks like one, a message without control characters and of bounded length.
 */
function platformError(bodyJson: string): { code?: string; message?: string; field?: string } {
  let body: unknown;
  try {
    body = JSON.parse(bodyJson);
  } catch {
    return {};
  }
  const error = isRecord(body) ? body.error : undefined;
  if (!isRecord(error)) return {};
  const text = (v: unknown) =>
    typeof v === 'string' && v.trim() !== ''
      ? v.replace(/[\p{Cc}\p{Cf}]+/gu, ' ').slice(0, MAX_PLATFORM_MESSAGE)
      : undefined;
  const code = typeof error.code === 'string' && PLATFORM_CODE.test(error.code) ? error.code : undefined;
  const out: { code?: string; message?: string; field?: string } = {};
  if (code !== undefined) out.code = code;
  const message = text(error.message);
  if (message !== undefined) out.message = message;
  const field = text(error.field);
  if (field !== undefined) out.field = field.slice(0, 100);
  return out;
}

/** A path segment for an id the agent gave; one that would change the path is refused. */
function segment(argument: string, value: string): string {
  if (value === '.' || value === '..' || value.includes('/') || value.includes('\\')) {
    throw new ToolFailure(
      'invalid_argument',
      `\`${argument}\` must be an id as the platform gives it: not "." or "..", and without "/" or "\\"`,
    );
  }
  return encodeURIComponent(value);
}

/**
 * readPlatform makes one GET to the ad platform through the upstream-proxy on behalf of the
 * caller and returns the parsed JSON of a 2xx answer. A 4xx answer becomes a tool error: 404
 * `not_found` with `read.notFound`, 400 `invalid_argument` with the platform's message, any
 * other with the platform's own code. The proxy's own refusals (an account outside the
 * workspace, rate limits, an unavailable platform) arrive as Connect errors, which callTool maps.
 */
async function readPlatform(caller: Caller, deps: GatewayDeps, read: PlatformRead): Promise<unknown> {
  const query: { name: string; value: string }[] = [];
  for (const [name, value] of Object.entries(read.query)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) query.push({ name, value: String(v) });
  }
  const res = await deps.upstream.call(
    { accountId: read.accountId, method: 'GET', path: read.path, query, bodyJson: '', idempotencyKey: '' },
    onBehalfOf(caller.principal),
  );
  if (res.status >= 200 && res.status <= 299) {
    try {
      return res.bodyJson === '' ? {} : (JSON.parse(res.bodyJson) as unknown);
    } catch {
      throw new ToolFailure(
        'upstream_error',
        'the ad platform sent a response that is not JSON; try again later',
      );
    }
  }
  const error = platformError(res.bodyJson);
  const said = error.message === undefined ? '' : `: ${error.message}`;
  if (res.status === 404) throw new ToolFailure('not_found', read.notFound);
  if (res.status === 400) {
    const field = error.field === undefined ? '' : ` (field ${error.field})`;
    throw new ToolFailure('invalid_argument', `the ad platform refused the request${field}${said}`);
  }
  throw new ToolFailure(
    error.code ?? `upstream_http_${res.status}`,
    `the ad platform refused the request (HTTP ${res.status}${error.code === undefined ? '' : ` ${error.code}`})${said}`,
  );
}

function unexpected(what: string): ToolFailure {
  return new ToolFailure(
    'upstream_error',
    `the ad platform answered ${what} with an unexpected shape; try again later`,
  );
}

const getAdInput = object(
  {
    account_id: accountId,
    ad_id: string({
      min: 1,
      max: 255,
      description: 'The ad, as the platform identifies it (ads_list_ads lists them).',
    }),
    include,
  },
  ['account_id', 'ad_id'],
);

export const getAd = defineTool<GatewayDeps, typeof getAdInput>({
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
  openWorld: true,
  destructive: false,
  routesTo: CALL_RPC,
  async run({ caller, deps }, args) {
    const ad = await readPlatform(caller, deps, {
      accountId: args.account_id,
      path: `/ads/${segment('ad_id', args.ad_id)}`,
      query: { include: args.include },
      notFound: `no ad ${args.ad_id} in ad account ${args.account_id}; ads_list_ads lists the account's ads`,
    });
    if (!isRecord(ad)) throw unexpected('GET /ads/{ad_id}');
    return { ad };
  },
});

const listAdsInput = object(
  {
    account_id: accountId,
    include,
    ad_group_id: string({ min: 1, max: 255, description: 'Only the ads of this ad group.' }),
    name: string({
      min: 3,
      max: 1000,
      nonBlank: true,
      description: 'Only the ads whose name contains this text (the platform ignores case).',
    }),
    limit: integer({ min: 1, max: 500, description: 'Page size, 1 to 500 (the platform’s default is 25).' }),
    after: string({
      min: 1,
      max: 2048,
      description: 'Cursor: the page after this one (a paging.after from an earlier page).',
    }),
    before: string({
      min: 1,
      max: 2048,
      description: 'Cursor: the page before this one (a paging.before from an earlier page).',
    }),
    order: enumOf(['asc', 'desc'], 'Sort direction of the list: asc or desc.'),
  },
  ['account_id'],
);

export const listAds = defineTool<GatewayDeps, typeof listAdsInput>({
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
  openWorld: true,
  destructive: false,
  routesTo: CALL_RPC,
  async run({ caller, deps }, args) {
    const page = await readPlatform(caller, deps, {
      accountId: args.account_id,
      path: '/ads',
      query: {
        include: args.include,
        ad_group_id: args.ad_group_id,
        name: args.name,
        limit: args.limit,
        after: args.after,
        before: args.before,
        order: args.order,
      },
      notFound: `the ad platform found no ads listing for ad account ${args.account_id}; check ad_group_id`,
    });
    if (!isRecord(page) || !Array.isArray(page.data) || !isRecord(page.paging)) throw unexpected('GET /ads');
    return { ads: page.data, paging: page.paging };
  },
});

export const adTools: readonly ToolDefinition<GatewayDeps>[] = [getAd, listAds];
