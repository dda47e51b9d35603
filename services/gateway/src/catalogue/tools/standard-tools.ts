/**
 * Account standards and templates, kept by the changes service: a standard's rules are checked
 * when a change to the account is prepared and again before it is applied.
 */
import {
  type ArchiveAccountStandardResponse,
  type PendingStandardChange,
  type SaveAccountStandardResponse,
  StandardsService,
} from '@adsmcp/proto/changes/v1/standards_pb';
import { HOSTNAME, HOSTNAME_HINT } from '@adsmcp/runtime/ids';
import type { DescMessage } from '@bufbuild/protobuf';
import type { GatewayDeps } from '../../deps.ts';
import { unstorable } from '../../storable-text.ts';
import type { ToolRow } from '../catalogue.ts';
import { type FieldAdditions, inputFromRequest } from '../input-schema.ts';
import { messageSchema } from '../output-schema.ts';
import { resultOf } from '../rpc-mapping.ts';
import { type Schema, string } from '../schema.ts';
import { ACCOUNT_ID_TEXT, EXAMPLE_ACCOUNT } from './platform-arguments.ts';

const GROUP = 'Campaign support';
const TEMPLATE_MAX_PROPERTIES = 100;
/** How deep a template may nest: deep enough for any ad object, shallow enough to walk safely. */
const TEMPLATE_MAX_DEPTH = 16;

const EXPECTED_REVISION_TEXT =
  'The revision the standard is at now (from ads_list_account_standards or the last save).';

/** Where in `value` a string or a key holds U+0000 (PostgreSQL stores none), or nests too deep. */
function templateIssue(value: unknown, path: string, depth: number): string | undefined {
  if (depth > TEMPLATE_MAX_DEPTH) return `\`${path}\` nests deeper than ${TEMPLATE_MAX_DEPTH} levels`;
  if (typeof value === 'string') {
    if (value.includes('\u0000')) return `\`${path}\` must not contain the NUL character (U+0000)`;
    // Stored in jsonb, half of a surrogate pair would come back as U+FFFD: refused, by name.
    const rule = unstorable(value);
    return rule === undefined ? undefined : `\`${path}\` ${rule}`;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const entries: [string, unknown][] = Array.isArray(value)
    ? value.map((v, i) => [`[${i}]`, v])
    : Object.entries(value).map(([k, v]) => [`.${k}`, v]);
  for (const [step, v] of entries) {
    if (step.includes('\u0000')) return `a key of \`${path}\` must not contain the NUL character (U+0000)`;
    const keyRule = unstorable(step);
    if (keyRule !== undefined) return `a key of \`${path}\` ${keyRule}`;
    const issue = templateIssue(v, `${path}${step}`, depth + 1);
    if (issue !== undefined) return issue;
  }
  return undefined;
}

/** A template: any JSON object of at most 100 properties (authorization and remote ids are refused by the service). */
function templateObject(description: string): Schema<Record<string, unknown>> {
  return {
    json: { type: 'object', maxProperties: TEMPLATE_MAX_PROPERTIES, description },
    check(value, path, out) {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        out.push({ path, message: `\`${path}\` must be an object` });
        return;
      }
      const n = Object.keys(value).length;
      if (n > TEMPLATE_MAX_PROPERTIES) {
        out.push({
          path,
          message: `\`${path}\` must have at most ${TEMPLATE_MAX_PROPERTIES} properties (got ${n})`,
        });
        return;
      }
      const issue = templateIssue(value, path, 0);
      if (issue !== undefined) out.push({ path, message: issue });
    },
  };
}

/** What StandardData's fields add to its rules: descriptions, formats, and the template's own schema. */
const standardData = {
  description: 'The rules of a standard, or the content of a template.',
  fields: {
    naming_prefix: {
      nonBlank: true,
      description: 'Every name a change sets (ad, ad group, audience, campaign) must start with it.',
    },
    allowed_domains: {
      // The tool asks for the ASCII form of a hostname; the service takes a Unicode one too.
      items: string({ min: 1, max: 255, pattern: HOSTNAME, patternHint: HOSTNAME_HINT }),
      description:
        'Hostnames (example.com, no scheme or path) target URLs may link to; their subdomains are allowed too. At most 50.',
    },
    utm: {
      description:
        'UTM parameters every target URL a change sets must carry in its query, each with exactly this value.',
    },
    operating_start: {
      format: 'date',
      description:
        'First account-local day (YYYY-MM-DD) on which changes may be made and schedules may start.',
    },
    operating_end: {
      format: 'date',
      description: 'Last account-local day (YYYY-MM-DD) of the operating window; not before operating_start.',
    },
    guidance: {
      multiline: true,
      description: 'Shown to the person who reviews a change checked against this standard.',
    },
    // A Struct in the request: its bounds (properties, depth, no NUL) are the tool's.
    template: templateObject(
      'Reusable fields (kind template), at most 100 properties; authorization and remote identity fields are refused.',
    ),
  },
} satisfies FieldAdditions;

const PENDING_DESCRIBED =
  'A save or archive that would loosen a standard (kind standard) is not applied: removing or changing the ' +
  'naming prefix (a longer prefix that starts with the one in force tightens), emptying allowed_domains or adding ' +
  'a domain to them, dropping or changing a required utm value, an earlier or removed operating_start or a later ' +
  'or removed operating_end, and any archive of a standard. It is recorded as a pending standard change that a ' +
  'workspace admin confirms or rejects in the dashboard, whatever the role of this connection; until then the ' +
  'standard in force keeps applying to every change prepared, approved or applied. The result then has pending ' +
  '(its loosenings, each in words), the standard as it is in force, confirm_url (the dashboard page where a person ' +
  'decides) and next_step saying so. Tightening (a new rule, a narrower window, fewer domains) applies at once.';

/** The result's shape: the response message, with where a person confirms a pending change and what comes next. */
function pendingAwareOutput(desc: DescMessage): Record<string, unknown> {
  const base = messageSchema(desc) as { properties: Record<string, unknown>; required: string[] };
  return {
    ...base,
    properties: {
      ...base.properties,
      confirm_url: { anyOf: [{ type: 'string' }, { type: 'null' }] },
      next_step: { type: 'string' },
    },
    required: [...base.required, 'confirm_url', 'next_step'],
  };
}

/** What the agent is told about a save or archive: applied, or pending a person's confirmation and where. */
function pendingAwareResult(
  desc: DescMessage,
  res: SaveAccountStandardResponse | ArchiveAccountStandardResponse,
  publicUrl: string,
  done: string,
): Record<string, unknown> {
  const result = resultOf(desc, res);
  const pending: PendingStandardChange | undefined = res.pending;
  if (pending === undefined) return { ...result, confirm_url: null, next_step: done };
  const url = `${publicUrl}/dashboard/accounts/${pending.accountId}#pending-standard-changes`;
  return {
    ...result,
    confirm_url: url,
    next_step:
      `Not applied yet: this ${pending.action} would loosen standard "${pending.standardName}" ` +
      `(${pending.loosenings.join('; ')}). It is pending a person's confirmation: a workspace admin confirms or ` +
      `rejects it in the dashboard at ${url}. Until then revision ${pending.baseRevision} of the standard stays in ` +
      'force and every change is checked against it.',
  };
}

const RULES_DESCRIBED =
  'A standard (kind standard) is enforced on every change prepared for the account, and again just before the ' +
  'change is applied (a change that breaks a standard saved after it was prepared fails at apply, and nothing is ' +
  'sent): naming_prefix on every name the change sets (name, campaign_name, ad_group_name, ad_name); ' +
  'allowed_domains and utm on every target URL it sets (target_url, click_url, landing_page_url, ' +
  'destination_url, final_url); operating_start..operating_end (account-local dates) on the day it is prepared ' +
  'or applied (a pause or an archive is always allowed) and on every schedule it sets (start_time, end_time, ' +
  'start_date, end_date). A refusal names the field, the rule and the standard, e.g. "body.name must start with ' +
  'ACME- (standard Naming)". guidance is shown to the reviewer. A template (kind template) is kept for reuse ' +
  'and not enforced; its template object must not hold authorization fields (authorization, access_token, ' +
  'refresh_token, id_token, token, bearer, api_key, apikey, secret, client_secret, password, cookie, ' +
  'credential(s), session, any *_token, *_secret, *_password, *_api_key) or remote identity fields (id, ' +
  'account_id, ad_account_id, campaign_id, ad_group_id, ad_id, creative_id, pixel_id, file_id, ' +
  'custom_audience_id, audience_id, product_feed_id, feed_id, conversion_source_id, job_id, business_id), at ' +
  'any depth; the refusal names each by its path.';

const listInput = inputFromRequest(StandardsService.method.listAccountStandards.input, {
  account_id: { description: ACCOUNT_ID_TEXT },
  limit: { description: 'Page size; 20 when omitted.' },
  offset: { description: 'Standards to skip; 0 when omitted.' },
});

export const listAccountStandards: ToolRow<GatewayDeps> = {
  name: 'ads_list_account_standards',
  title: 'List account standards',
  group: GROUP,
  behavior: 'read',
  features: [],
  description:
    'Lists the standards and templates of an ad account that are not archived, most recently updated first, ' +
    'with their data and revision. Returns standards, total (across all pages) and next_offset (pass it as ' +
    'offset for the next page; null on the last page).',
  input: listInput,
  example: { account_id: EXAMPLE_ACCOUNT, limit: 20, offset: 0 },
  route: { kind: 'rpc', method: StandardsService.method.listAccountStandards, account: 'account_id' },
};

const saveInput = inputFromRequest(StandardsService.method.saveAccountStandard.input, {
  account_id: { description: ACCOUNT_ID_TEXT },
  name: { nonBlank: true },
  kind: { description: 'standard: enforced on the account’s changes; template: kept for reuse.' },
  data: standardData,
  standard_id: { description: 'To update a standard: its id. Omit it to create one.' },
  expected_revision: { description: EXPECTED_REVISION_TEXT },
});

export const saveAccountStandard: ToolRow<GatewayDeps> = {
  name: 'ads_save_account_standard',
  title: 'Save an account standard',
  group: GROUP,
  behavior: 'write',
  features: [],
  description:
    'Creates a standard or template for an ad account, or updates one: give standard_id and the ' +
    'expected_revision you last read (a stale revision is refused with the current one, error code ' +
    'stale_revision); the name and data are replaced and the revision grows by one. The kind and the account ' +
    'of a standard cannot change; an archived one cannot be updated. Saving does not change live advertising; ' +
    'changes prepared from now on are checked against it, and changes already prepared are checked again when ' +
    'they are applied. Every active standard applies to every change, so a standard (kind standard) that ' +
    'contradicts another active standard of the account is refused (invalid_argument, nothing saved), naming ' +
    'its field and the other standard: naming prefixes neither of which starts with the other (ACME- and ' +
    'ACME-EU- may be kept together, ACME- and BETA- may not), allowed_domains with no domain allowed by both ' +
    '(a subdomain is within its domain), different values of the same utm parameter, operating windows sharing ' +
    'no day. An update is compared with the other standards, not with itself; archive or change one of the two.' +
    `\n${PENDING_DESCRIBED}\n${RULES_DESCRIBED}`,
  input: saveInput,
  example: {
    account_id: EXAMPLE_ACCOUNT,
    name: 'Naming and tracking',
    kind: 'standard',
    data: {
      naming_prefix: 'ACME-',
      allowed_domains: ['example.com'],
      utm: { utm_source: 'ads', utm_medium: 'cpc' },
      operating_start: '2026-01-01',
      operating_end: '2026-12-31',
      guidance: 'Check the landing page is the spring collection.',
    },
    standard_id: '5b6c7d8e-9f0a-4b1c-8d2e-3f4a5b6c7d8e',
    expected_revision: 2,
  },
  output: pendingAwareOutput(StandardsService.method.saveAccountStandard.output),
  route: {
    kind: 'rpc',
    method: StandardsService.method.saveAccountStandard,
    account: 'account_id',
    view: (res, { deps }) =>
      pendingAwareResult(
        StandardsService.method.saveAccountStandard.output,
        res as SaveAccountStandardResponse,
        deps.publicUrl,
        'Saved: changes prepared from now on are checked against it.',
      ),
  },
};

const archiveInput = inputFromRequest(StandardsService.method.archiveAccountStandard.input, {
  standard_id: { description: 'The standard or template to archive.' },
  expected_revision: { description: EXPECTED_REVISION_TEXT },
});

export const archiveAccountStandard: ToolRow<GatewayDeps> = {
  name: 'ads_archive_account_standard',
  title: 'Archive an account standard',
  group: GROUP,
  behavior: 'write',
  features: [],
  description:
    'Archives a standard or template of the workspace: it is no longer listed nor enforced (changes prepared ' +
    'under it are no longer held to it at apply). expected_revision must be the revision it is at now; a stale ' +
    'one is refused with the current revision (error code stale_revision). Live advertising is not changed. ' +
    'Archiving a template applies at once; archiving a standard (kind standard) loosens it, so it is recorded as a ' +
    'pending standard change that a workspace admin confirms or rejects in the dashboard: the result has pending, ' +
    'the standard still in force (archived false), confirm_url and next_step, and the standard keeps applying until then.',
  input: archiveInput,
  destructive: true,
  example: { standard_id: '5b6c7d8e-9f0a-4b1c-8d2e-3f4a5b6c7d8e', expected_revision: 3 },
  output: pendingAwareOutput(StandardsService.method.archiveAccountStandard.output),
  route: {
    kind: 'rpc',
    method: StandardsService.method.archiveAccountStandard,
    view: (res, { deps }) =>
      pendingAwareResult(
        StandardsService.method.archiveAccountStandard.output,
        res as ArchiveAccountStandardResponse,
        deps.publicUrl,
        'Archived: it is no longer enforced.',
      ),
  },
};

export const standardTools: readonly ToolRow<GatewayDeps>[] = [
  listAccountStandards,
  saveAccountStandard,
  archiveAccountStandard,
];
