/**
 * Planning reads: an amount as exact micros of the ad account's currency, and local times as
 * instants in the account's time zone. The changes service, which owns planning, reads the account
 * and does the arithmetic; nothing on the platform changes.
 */
import { ChangesService } from '@adsmcp/proto/changes/v1/changes_pb';
import type { GatewayDeps } from '../../deps.ts';
import type { ToolRow } from '../catalogue.ts';
import { enumOf, object, string } from '../schema.ts';
import { accountId, EXAMPLE_ACCOUNT } from './platform-arguments.ts';

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
    'the instant chosen then carries a note. The end must be after the start. Changes nothing.',
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

export const planningTools: readonly ToolRow<GatewayDeps>[] = [planMoney, planSchedule];
