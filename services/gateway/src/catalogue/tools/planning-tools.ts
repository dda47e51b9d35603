/**
 * Planning reads: an amount as exact micros of the ad account's currency, and local times as
 * instants in the account's time zone. The changes service, which owns planning, reads the account
 * and does the arithmetic; nothing on the platform changes.
 */
import { ChangesService, type PlanChangeResponse } from '@adsmcp/proto/changes/v1/changes_pb';
import { creativeFields } from '@adsmcp/runtime/platform-bodies';
import { Code, ConnectError } from '@connectrpc/connect';
import { type GatewayDeps, onBehalfOf } from '../../deps.ts';
import { ToolFailure } from '../../mcp/tool-failure.ts';
import { defineTool, type ToolContext, type ToolRow } from '../catalogue.ts';
import { prepareRequest } from '../route-runner.ts';
import { enumOf, type Issue, type JsonSchema, object, type Schema, string, validate } from '../schema.ts';
import { adGroupTools } from './ad-group-tools.ts';
import { audienceTools } from './audience-tools.ts';
import { batchPreflight } from './batch-tools.ts';
import { campaignTools } from './campaign-tools.ts';
import { changeTools } from './change-tools.ts';
import { conversionTools } from './conversion-tools.ts';
import { accountId, EXAMPLE_ACCOUNT } from './platform-arguments.ts';
import { revertPreflight } from './revert-tools.ts';

const planMoneyInput = object(
  {
    account_id: accountId,
    amount: string({
      max: 32,
      pattern: /^\d+(\.\d+)?$/,
      patternHint: 'decimal digits with an optional fractional part, such as "19.99"',
      description:
        'The amount in the account currency, as a string of decimal digits ("19.99"); no more decimals than ' +
        'the currency has (none for JPY). For cpm, the price per thousand impressions.',
    }),
    currency: string({
      pattern: /^[A-Z]{3}$/,
      patternHint: '3 uppercase letters (an ISO 4217 code such as USD)',
      description:
        'The currency of the amount; it must be the account currency (ads_list_accounts shows it).',
    }),
    purpose: enumOf(['budget', 'cpm', 'cpc', 'cpa'], 'What the amount is: a budget or a bid of that kind.'),
    objective: enumOf(
      ['impressions', 'clicks', 'conversions'],
      'What the campaign optimizes for; cpm needs impressions, cpc clicks, cpa conversions; a budget takes any.',
    ),
    wire_format: enumOf(
      ['single', 'bulk'],
      'For cpm: single (the default) sends micros per single impression, bulk micros per thousand impressions.',
    ),
  },
  ['account_id', 'amount', 'currency', 'purpose'],
);

const planMoney: ToolRow<GatewayDeps> = {
  name: 'ads_plan_money',
  title: 'Plan an amount of money',
  group: 'Campaign creation',
  behavior: 'read',
  features: [],
  description:
    'Converts an amount in the ad account currency to exact integer micros (1 unit = 1,000,000 micros; "0.3" is ' +
    '300000), by decimal arithmetic, never floating point. No currency conversion: a currency other than the ' +
    "account's is refused, naming the account currency. The amount may have no more decimals than the currency " +
    '(JPY none). Bounds: above 0; a bid (cpm, cpc, cpa) at most 30,400,000 units (30400000000000 micros, the ' +
    'largest an ad group accepts); a budget at most 1,000,000,000 units. Objective must suit the purpose: cpm ' +
    'impressions, cpc clicks, cpa conversions (cpc with impressions is refused); a budget takes any. For cpm ' +
    'the amount is per thousand impressions and the wire formats differ in unit: single = micros per single ' +
    'impression (amount_micros / 1000), bulk = micros per thousand impressions; the result shows both ' +
    '(cpm_single_micros, cpm_bulk_micros) and wire_micros, the value for the chosen wire_format (default ' +
    'single). Changes nothing.',
  input: planMoneyInput,
  example: {
    account_id: EXAMPLE_ACCOUNT,
    amount: '2.50',
    currency: 'USD',
    purpose: 'cpm',
    objective: 'impressions',
    wire_format: 'bulk',
  },
  route: { kind: 'rpc', method: ChangesService.method.planMoney },
};

const localTime = (description: string) =>
  string({
    pattern: /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/,
    patternHint: 'a local time YYYY-MM-DDTHH:mm or YYYY-MM-DDTHH:mm:ss, without an offset',
    description,
  });

const planSchedule: ToolRow<GatewayDeps> = {
  name: 'ads_plan_schedule',
  title: 'Plan a schedule',
  group: 'Campaign creation',
  behavior: 'read',
  features: [],
  description:
    "Converts a start and an end given as local times in the ad account's IANA time zone (ads_list_accounts " +
    'shows it) to exact instants: for each, utc (RFC 3339 in UTC) and with_offset (RFC 3339 with the zone ' +
    'offset), plus duration_seconds. A local time that a daylight-saving change skips (spring forward) or ' +
    'repeats (fall back) is refused unless ambiguity is earlier or later (reject, the default, refuses it); ' +
    'the instant chosen then carries a note. The end must be after the start. Refused too: second 60 (a ' +
    'time zone has no leap seconds), and a local time RFC 3339 cannot write: its instant outside the years ' +
    '0000 to 9999 in UTC, or at a historical offset with seconds (local mean time before standard time, ' +
    'such as -04:56:02 in New York before 1883), so utc and with_offset always name the same instant. ' +
    'Changes nothing.',
  input: object(
    {
      account_id: accountId,
      start_local: localTime('When it starts, in the account time zone.'),
      end_local: localTime('When it ends, in the account time zone; after start_local.'),
      ambiguity: enumOf(
        ['reject', 'earlier', 'later'],
        'For a local time skipped or repeated by a daylight-saving change: reject (the default) refuses it, ' +
          'earlier or later takes that instant.',
      ),
    },
    ['account_id', 'start_local', 'end_local'],
  ),
  example: {
    account_id: EXAMPLE_ACCOUNT,
    start_local: '2026-11-01T01:30',
    end_local: '2026-11-30T23:59:59',
    ambiguity: 'later',
  },
  route: { kind: 'rpc', method: ChangesService.method.planSchedule },
};

const validateCreative: ToolRow<GatewayDeps> = {
  name: 'ads_validate_creative',
  title: 'Validate a creative',
  group: 'Campaign creation',
  behavior: 'read',
  features: [],
  description:
    'Checks an ad creative before any ad has it, by the rules the prepare tools apply (ads_update_ad): the ' +
    'field rules of the input (type, title 1 to 50 characters and not blank, body up to 100, target_url an ' +
    'http(s) URL, file_id) refuse bad copy as invalid arguments naming each field; the ad creative rules of the ' +
    'changes service give copy_issues. The image is reported apart, in image: required (a chat_card shows an ' +
    'image, a product_ad_template none), present (file_id given) and issue (empty when right; a chat_card ' +
    'without file_id has one). valid is true when there is no copy issue and no image issue. Writes nothing.',
  input: object(
    {
      account_id: accountId,
      creative: object(
        {
          type: creativeFields.type,
          title: creativeFields.title,
          body: creativeFields.body,
          target_url: creativeFields.target_url,
          file_id: creativeFields.file_id,
        },
        ['type', 'title', 'body'],
        'The creative, with the field rules of ads_update_ad.',
      ),
    },
    ['account_id', 'creative'],
  ),
  example: {
    account_id: EXAMPLE_ACCOUNT,
    creative: {
      type: 'chat_card',
      title: 'Two plants for one',
      body: 'Every plant, this week only.',
      target_url: 'https://shop.example.com/spring',
      file_id: 'file_0123456789abcdef',
    },
  },
  route: { kind: 'rpc', method: ChangesService.method.validateCreative },
};

/** The prepare tools a preflight can plan for, by name. */
export const PREPARE_TOOLS = new Map(
  [
    ...adGroupTools,
    ...audienceTools,
    ...campaignTools,
    ...changeTools,
    ...conversionTools,
    batchPreflight.tool,
    revertPreflight.tool,
  ]
    .filter((t) => t.behavior === 'prepare')
    .map((t) => [t.name, t]),
);

/** A prepare tool with a route of its own (a run), planned by its own code rather than PlanChange. */
interface OwnPlanner {
  tool: ToolRow<GatewayDeps>;
  /** Why `current` does not apply to this tool (it has no target to stand for), or none when it does. */
  noCurrent?: string;
  /** False for a tool whose arguments name no account (the planner checks `account_id` itself). */
  accountFromArgs?: boolean;
  /** The plan, and what it cannot show yet (see the preflight's `notes`). */
  plan(
    ctx: ToolContext<GatewayDeps>,
    args: Record<string, unknown>,
    accountId: string,
  ): Promise<{ plan: PlanChangeResponse; notes: string[] }>;
}

const OWN_PLANNERS = new Map<string, OwnPlanner>([
  [batchPreflight.tool.name, batchPreflight],
  [revertPreflight.tool.name, revertPreflight],
]);

/** Any JSON object: its rules are those of the tool it is for, checked by the run. */
function anyObject(description: string): Schema<Record<string, unknown>> {
  return {
    json: { type: 'object', description },
    check(value, path, out) {
      if (typeof value !== 'object' || value === null || Array.isArray(value))
        out.push({ path, message: `\`${path}\` must be an object` });
    },
  };
}

/** The service refusals a prepare tool gives for a change it would not record. */
const REFUSALS: Partial<Record<Code, string>> = {
  [Code.InvalidArgument]: 'invalid_argument',
  [Code.FailedPrecondition]: 'failed_precondition',
  [Code.NotFound]: 'not_found',
  // e.g. an account without bulk access on the platform, for an ad batch.
  [Code.PermissionDenied]: 'permission_denied',
};

const issueJson: JsonSchema = {
  type: 'object',
  properties: { path: { type: 'string' }, message: { type: 'string' } },
  required: ['path', 'message'],
  additionalProperties: false,
};

const preflightOutput: JsonSchema = {
  type: 'object',
  properties: {
    would_prepare: { type: 'boolean' },
    operation: { type: 'string', description: 'The prepare tool planned.' },
    verified: {
      type: 'boolean',
      description: 'True when planned against the live object, false when against `current`.',
    },
    issues: { type: 'array', items: issueJson, description: 'Where `args` break the tool input rules.' },
    notes: {
      type: 'array',
      items: { type: 'string' },
      description:
        'What the planned change cannot show yet and the prepare tool will do first, such as an ad batch’s ' +
        'source images not saved as campaign assets; empty otherwise.',
    },
    refusal: {
      type: ['object', 'null'],
      properties: { code: { type: 'string' }, message: { type: 'string' } },
      required: ['code', 'message'],
      additionalProperties: false,
    },
    change: {
      type: ['object', 'null'],
      description:
        'What the prepare tool would record: summary, the upstream operation, its digest; also given when ' +
        'only permission is missing.',
      properties: {
        summary: { type: 'string' },
        operation: {
          type: 'object',
          properties: { method: { type: 'string' }, path: { type: 'string' }, body_json: { type: 'string' } },
          required: ['method', 'path', 'body_json'],
          additionalProperties: false,
        },
        digest: { type: 'string' },
        target_path: { type: 'string' },
      },
      required: ['summary', 'operation', 'digest', 'target_path'],
      additionalProperties: false,
    },
  },
  required: ['would_prepare', 'operation', 'verified', 'issues', 'notes', 'refusal', 'change'],
  additionalProperties: false,
};

const preflightInput = object(
  {
    account_id: accountId,
    operation: string({
      min: 1,
      max: 100,
      description: 'The name of a prepare tool (ads_update_ad, ads_create_ad_group, ...).',
    }),
    args: anyObject('The arguments of that tool, as its own input schema gives them.'),
    current: anyObject(
      'The target as you believe it is, planned against instead of the live object (the result then says ' +
        'verified: false). Refused for ads_prepare_ad_batch, which creates new objects and has no target, and ' +
        'for ads_prepare_revert, which must read the objects to refuse reverting one that moved.',
    ),
  },
  ['account_id', 'operation', 'args'],
);

const refusedResult = (
  operation: string,
  verified: boolean,
  issues: Issue[],
  code: string,
  message: string,
) => ({
  would_prepare: false,
  operation,
  verified,
  issues,
  notes: [],
  refusal: { code, message },
  change: null,
});

const preflightChange = defineTool<GatewayDeps, typeof preflightInput>({
  name: 'ads_preflight_change',
  title: 'Preflight a change',
  group: 'Campaign creation',
  behavior: 'read',
  features: [],
  description:
    'Says what a prepare tool would do with these arguments, recording nothing and returning no change_id. ' +
    'args is checked against the input schema of the tool named by operation (issues lists each problem with ' +
    'its path); valid args are planned by the changes service exactly as the prepare tool would plan them: ' +
    'the target is read live (verified: true), or, with current given, current is taken as the target and ' +
    'not read (verified: false); ads_prepare_ad_batch has no target and ads_prepare_revert reads the objects it ' +
    'reverts, so current is refused for both. The ' +
    'result has would_prepare and either change (the summary, the upstream ' +
    'operation and the digest the prepare tool would record) or refusal (the code and message the prepare ' +
    'tool would give). A connection that may not prepare changes (read scope, viewer role, a read-only ' +
    'connection to the account) still gets the change, with would_prepare false and the permission_denied ' +
    'refusal prepare would give. account_id must be the account of args (for ads_prepare_revert, of the change ' +
    'named by args.change_id). An operation that is not a prepare tool is ' +
    'refused, naming the prepare tools. Writes nothing and fetches nothing: for ads_prepare_ad_batch, a ' +
    'variant whose source image is not saved as a campaign asset yet is planned without its image, and notes ' +
    'says which (the prepare tool saves it first, so its change shows the image and has another digest).',
  input: preflightInput,
  example: {
    account_id: EXAMPLE_ACCOUNT,
    operation: 'ads_update_ad',
    args: {
      account_id: EXAMPLE_ACCOUNT,
      ad_id: 'ad_0123456789abcdef',
      body: { creative: { title: 'Two plants for one' } },
    },
  },
  output: preflightOutput,
  idempotent: true,
  route: {
    kind: 'run',
    why: 'it runs on another tool’s row: it looks the prepare tool up in the catalogue, validates args by that tool’s input schema, and plans with its route',
    routesTo:
      'changes.v1.ChangesService/PlanChange; for ads_prepare_ad_batch, changes.v1.BatchService/PlanSavedAdBatch; for ' +
      'ads_prepare_revert, changes.v1.RevertService/PlanRevert',
    async run(ctx, input) {
      const { caller, deps } = ctx;
      const own = OWN_PLANNERS.get(input.operation);
      const tool = PREPARE_TOOLS.get(input.operation);
      const route = tool?.route.kind === 'prepare' ? tool.route : undefined;
      if (tool === undefined || (own === undefined && route === undefined)) {
        throw new ToolFailure(
          'invalid_argument',
          `operation must be the name of a prepare tool: one of ${[...PREPARE_TOOLS.keys()].join(', ')} (got ${JSON.stringify(input.operation)})`,
        );
      }
      if (own?.noCurrent !== undefined && input.current !== undefined)
        throw new ToolFailure('invalid_argument', `\`current\` ${own.noCurrent}`, {
          issues: [{ path: 'current', message: `\`current\` ${own.noCurrent}` }],
        });
      const verified = input.current === undefined;
      const issues = validate(tool.input, input.args);
      if (issues.length > 0) {
        const message = `invalid arguments for ${tool.name}: ${issues.map((i) => i.message).join('; ')}`;
        return refusedResult(tool.name, verified, issues, 'invalid_argument', message);
      }
      // Both are uuids (checked above): the same account in either case is the same account.
      if (
        own?.accountFromArgs !== false &&
        String(input.args.account_id).toLowerCase() !== input.account_id.toLowerCase()
      ) {
        throw new ToolFailure(
          'invalid_argument',
          '`args.account_id` must be `account_id`, the account planned on',
        );
      }
      try {
        const { plan: res, notes } =
          route === undefined
            ? await (own as OwnPlanner).plan(ctx, input.args, input.account_id)
            : {
                plan: await deps.changes.planChange(
                  {
                    change: prepareRequest(route, tool.name, input.args),
                    currentJson: verified ? undefined : JSON.stringify(input.current),
                  },
                  onBehalfOf(caller.principal),
                ),
                notes: [],
              };
        const op = res.operation;
        // A caller who may not prepare still sees the plan: a preflight is a read.
        const denied =
          res.accessRefusal === '' ? null : { code: 'permission_denied', message: res.accessRefusal };
        return {
          would_prepare: denied === null,
          operation: tool.name,
          verified: res.verified,
          issues: [],
          notes,
          refusal: denied,
          change: {
            summary: res.summary,
            operation: { method: op?.method ?? '', path: op?.path ?? '', body_json: op?.bodyJson ?? '' },
            digest: res.digest,
            target_path: res.targetPath,
          },
        };
      } catch (err) {
        if (err instanceof ToolFailure) return refusedResult(tool.name, verified, [], err.code, err.message);
        const code = err instanceof ConnectError ? REFUSALS[err.code] : undefined;
        if (code === undefined || !(err instanceof ConnectError)) throw err;
        return refusedResult(tool.name, verified, [], code, err.rawMessage);
      }
    },
  },
});

export const planningTools: readonly ToolRow<GatewayDeps>[] = [
  planMoney,
  planSchedule,
  validateCreative,
  preflightChange,
];
