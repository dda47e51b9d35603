/** Competitor watch: public pages the workspace watches, checked through the safe fetcher. */
import { CompetitorService } from '@adsmcp/proto/marketing/v1/competitors_pb';
import type { GatewayDeps } from '../../deps.ts';
import type { ToolRow } from '../catalogue.ts';
import { inputFromRequest } from '../input-schema.ts';
import { string } from '../schema.ts';

const GROUP = 'Campaign support';
/** The largest revision an int32 holds. */
const _REVISION_MAX = 2_147_483_647;

const _uuid = (description: string) => string({ format: 'uuid', description });
const SOURCE_ID_TEXT = 'The competitor source (from ads_list_competitor_sources or the save).';
const paging = {
  limit: { description: 'Page size; 20 when omitted.' },
  offset: { description: 'Items to skip; next_offset of the previous page.' },
};

const EXAMPLE_ACCOUNT = '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90';
const EXAMPLE_SOURCE = '6a2f9c1e-4b7d-4e8a-9c3f-1d5e7b2a8c40';

const listCompetitorSources: ToolRow<GatewayDeps> = {
  name: 'ads_list_competitor_sources',
  title: 'List competitor sources',
  group: GROUP,
  behavior: 'read',
  features: [],
  description:
    'Lists the public pages the workspace watches (or those of one ad account), newest first: each with its url, ' +
    'literals, interval_hours, schedule_state (scheduled or paused), next_check_at, baseline_at, revision, who ' +
    'created it, and last_check (when, the outcome — baseline, unchanged, changed, refused or failed — the HTTP ' +
    'status and a one-line summary). Returns total and next_offset (null on the last page).',
  input: inputFromRequest(CompetitorService.method.listCompetitorSources.input, {
    account_id: { description: 'Only the sources of this ad account.' },
    ...paging,
  }),
  example: { account_id: EXAMPLE_ACCOUNT, limit: 20, offset: 0 },
  route: { kind: 'rpc', method: CompetitorService.method.listCompetitorSources },
};

const saveInput = inputFromRequest(CompetitorService.method.saveCompetitorSource.input, {
  account_id: { description: 'The ad account (from ads_list_accounts) the watch is for.' },
  name: { nonBlank: true, description: 'What the watch is, for people.' },
  // The service refuses a missing URL as one that is not https; the rules bound only its length.
  url: { required: true, format: 'https-uri', description: 'The public page to watch (https).' },
  interval_hours: { description: 'Hours between scheduled checks.' },
  // false is a choice the caller makes: leaving it out would save the source paused.
  enabled: {
    required: true,
    description:
      'Whether the page is checked on the schedule; false saves it paused (still checkable by hand).',
  },
  source_id: { description: 'To update a source: its id. Omit to create one.' },
  expected_revision: { description: 'Required when updating: the revision the source is at now.' },
  literals: {
    items: { nonBlank: true },
    description:
      'Phrases to watch (0 to 30, each 1 to 200 characters with a visible one). With phrases, a check records which are present ' +
      'or absent and which changed; without, it compares the page’s title and body text.',
  },
});

const saveCompetitorSource: ToolRow<GatewayDeps> = {
  name: 'ads_save_competitor_source',
  title: 'Save competitor source',
  group: GROUP,
  behavior: 'write',
  features: [],
  description:
    'Creates or updates a watched public page. Enabling it authorizes bounded recurring public reads: the page is ' +
    'read every interval_hours (with jitter, at most one read per host every few seconds across all sources, at ' +
    'most 1 MiB, https only and never an internal address) and each check is kept as an observation. The first ' +
    'successful check is the baseline; later checks compare the normalized title and body text with it, or, when ' +
    'literals are given, record which phrases are present or absent and which changed. Changing the url or the ' +
    'literals starts a new baseline. To update, pass source_id and the expected_revision you last read; a stale ' +
    'one is refused with the current revision (error code stale_revision). Only the member who created a source, ' +
    'or a workspace admin, may update it (permission_denied otherwise). Nothing changes in any ad account.',
  input: saveInput,
  example: {
    account_id: EXAMPLE_ACCOUNT,
    name: 'Rival spring offers',
    url: 'https://rival.example/spring',
    interval_hours: 24,
    enabled: true,
    source_id: EXAMPLE_SOURCE,
    expected_revision: 2,
    literals: ['free shipping', '20% off'],
  },
  route: { kind: 'rpc', method: CompetitorService.method.saveCompetitorSource, account: 'account_id' },
};

const pauseCompetitorSource: ToolRow<GatewayDeps> = {
  name: 'ads_pause_competitor_source',
  title: 'Pause competitor source',
  group: GROUP,
  behavior: 'write',
  features: [],
  description:
    'Stops the scheduled checks of a watched page; its observations are kept and it can still be checked by hand. ' +
    'Allowed to the member who created the source and to workspace admins. Needs no revision; pausing a paused ' +
    'source returns it unchanged. Save it with enabled true to resume.',
  input: inputFromRequest(CompetitorService.method.pauseCompetitorSource.input, {
    source_id: { description: SOURCE_ID_TEXT },
  }),
  idempotent: true,
  example: { source_id: EXAMPLE_SOURCE },
  route: { kind: 'rpc', method: CompetitorService.method.pauseCompetitorSource },
};

const checkCompetitorSource: ToolRow<GatewayDeps> = {
  name: 'ads_check_competitor_source',
  title: 'Check competitor source now',
  group: GROUP,
  behavior: 'write',
  features: [],
  description:
    'Reads the watched page now (paused sources too) through the safe fetcher and records an observation: the ' +
    'baseline on the first successful check, then unchanged or changed with evidence (title and body changes as ' +
    'short excerpts, or each phrase present or absent), the HTTP status, or why the read was refused (for example ' +
    'an internal address) or failed. One host is read at most once every few seconds: a check too soon after the ' +
    'last read of its host is refused with the wait (error code rate_limited). Returns the observation and the source.',
  input: inputFromRequest(CompetitorService.method.checkCompetitorSource.input, {
    source_id: { description: SOURCE_ID_TEXT },
  }),
  openWorld: true,
  example: { source_id: EXAMPLE_SOURCE },
  route: { kind: 'rpc', method: CompetitorService.method.checkCompetitorSource },
};

const getCompetitorObservations: ToolRow<GatewayDeps> = {
  name: 'ads_get_competitor_observations',
  title: 'Get competitor observations',
  group: GROUP,
  behavior: 'read',
  features: [],
  description:
    'Returns the observations of one watched page, newest first: when, manual or scheduled, the outcome, a ' +
    'summary, the HTTP status or the refusal or failure reason, the title, and the evidence (title_changed, ' +
    'body_changes as short before/after excerpts, literals with present, was_present and changed). The newest 500 ' +
    'observations of a source are kept. Returns total and next_offset (null on the last page).',
  input: inputFromRequest(CompetitorService.method.getCompetitorObservations.input, {
    source_id: { description: SOURCE_ID_TEXT },
    ...paging,
  }),
  example: { source_id: EXAMPLE_SOURCE, limit: 20, offset: 0 },
  route: { kind: 'rpc', method: CompetitorService.method.getCompetitorObservations },
};

export const competitorTools: readonly ToolRow<GatewayDeps>[] = [
  listCompetitorSources,
  saveCompetitorSource,
  pauseCompetitorSource,
  checkCompetitorSource,
  getCompetitorObservations,
];
