/**
 * Tool groups: the catalogue's groups (each tool has exactly one) as sets a connection selects, for
 * clients that cannot hold every tool description at once. A connection names its groups in the
 * MCP URL's `tools` query parameter (`/mcp?tools=accounts-and-reporting,marketing`); without it
 * every tool is served, or those of the groups its credential was issued with (a default stored
 * with the credential, which the URL narrows and never widens).
 *
 * The URL rather than a header: the URL is the one thing every MCP client is configured with (a
 * host that takes only a server URL, both official SDKs, an OAuth flow, whose resource is the
 * endpoint without its query), and both official clients send it unchanged on every request, so
 * each request of the connection carries its selection and the stateless server needs no memory.
 */
import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import type { Catalogue, Group, McpToolListing } from '../catalogue/catalogue.ts';

/** Each group's id in the URL and what it holds; `satisfies` keeps every group of the catalogue named. */
export const TOOL_GROUPS = {
  'Accounts and reporting': {
    id: 'accounts-and-reporting',
    holds: 'the connection, its ad accounts, ads, ad and ad-group insights',
  },
  'Campaign creation': {
    id: 'campaign-creation',
    holds:
      'campaigns, ad groups, ad updates, product feeds, bulk jobs, geo lookup, planning, preflight, and prepared changes (get, list, apply)',
  },
  Marketing: {
    id: 'marketing',
    holds: 'marketing items and context, variations, ad batches, performance imports and reports',
  },
  'Automation and optimization': {
    id: 'automation-and-optimization',
    holds: 'optimizers, their runs and their proposals',
  },
  'Campaign support': {
    id: 'campaign-support',
    holds: 'account standards, campaign assets, business outcomes and competitor watch',
  },
  'Conversions and audiences': {
    id: 'conversions-and-audiences',
    holds: 'conversion sources, event settings, events and insights; custom audiences',
  },
} as const satisfies Record<Group, { id: string; holds: string }>;

export type ToolGroupId = (typeof TOOL_GROUPS)[Group]['id'];

const BY_ID: ReadonlyMap<string, Group> = new Map(
  (Object.entries(TOOL_GROUPS) as [Group, { id: string }][]).map(([group, g]) => [g.id, group]),
);

export const TOOL_GROUP_IDS: readonly ToolGroupId[] = Object.values(TOOL_GROUPS).map((g) => g.id);

/** The query parameter of the MCP URL that selects tool groups. */
export const TOOLS_PARAMETER = 'tools';

/** The groups a connection selected; undefined when it selected none, and so has every tool. */
export type ToolSelection = ReadonlySet<Group> | undefined;

export type SelectionResult = { ok: true; groups: ToolSelection } | { ok: false; problem: string };

/**
 * The groups `ids` name, and the first id that names none (undefined when every one is a group).
 * Ids are trimmed and lower-cased; empty ones are skipped.
 */
function groupsOf(ids: readonly string[]): { groups: Set<Group>; unknown?: string } {
  const groups = new Set<Group>();
  for (const raw of ids) {
    const id = raw.trim().toLowerCase();
    if (id === '') continue;
    const group = BY_ID.get(id);
    if (group === undefined) return { groups, unknown: id };
    groups.add(group);
  }
  return { groups };
}

/**
 * The tool groups a credential is issued with: `value` is the ids separated by commas (the admin
 * command's `--tools`). Undefined for none given (every group); an error naming `field` and the
 * rule for an empty list or an id of no group, so a typo never issues a token with fewer tools
 * than meant.
 */
export function issuedToolGroups(
  value: string | undefined,
  field: string,
): { ok: true; ids: ToolGroupId[] | undefined } | { ok: false; problem: string } {
  if (value === undefined) return { ok: true, ids: undefined };
  const rule = `must name tool groups separated by commas: ${TOOL_GROUP_IDS.join(', ')}`;
  const { groups, unknown } = groupsOf(value.split(','));
  if (unknown !== undefined) {
    return { ok: false, problem: `${field} ${rule} (got ${JSON.stringify(unknown.slice(0, 80))})` };
  }
  if (groups.size === 0) return { ok: false, problem: `${field} ${rule} (got none)` };
  return { ok: true, ids: TOOL_GROUP_IDS.filter((id) => groups.has(BY_ID.get(id) as Group)) };
}

/**
 * The groups a credential was issued with; undefined when it was issued with none (every tool).
 * An id stored before its group was renamed selects nothing: a credential never gets more tools
 * than it was issued with.
 */
function credentialGroups(issued: readonly string[] | undefined): ReadonlySet<Group> | undefined {
  if (issued === undefined) return undefined;
  return new Set(issued.flatMap((id) => BY_ID.get(id) ?? []));
}

/**
 * The selection a request's URL (path and query) makes within the groups its credential was
 * issued with (`issued`; undefined for every group): `tools` holds group ids separated by commas,
 * and may be repeated. Without `tools` the credential's groups are served. The URL narrows within
 * them and never widens past them: a group the credential was not issued with is refused naming
 * the parameter and the credential's groups, rather than dropped (the client asked for a tool it
 * cannot have, and would otherwise look for it). A value naming no group, or a group that does not
 * exist, is refused naming the parameter and the ids there are, not ignored (a typo would
 * otherwise hide tools).
 */
export function toolSelection(url: string, issued?: readonly string[]): SelectionResult {
  const allowed = credentialGroups(issued);
  const params = new URL(url, 'http://unused.invalid').searchParams;
  const values = params.getAll(TOOLS_PARAMETER);
  if (values.length === 0) return { ok: true, groups: allowed };
  const rule = `must name tool groups separated by commas: ${TOOL_GROUP_IDS.join(', ')}`;
  const { groups, unknown } = groupsOf(values.flatMap((v) => v.split(',')));
  if (unknown !== undefined) {
    return { ok: false, problem: invalidSelection(`${rule} (got ${JSON.stringify(unknown.slice(0, 80))})`) };
  }
  if (groups.size === 0) return { ok: false, problem: invalidSelection(`${rule} (got none)`) };
  if (allowed !== undefined) {
    const outside = [...groups].find((g) => !allowed.has(g));
    if (outside !== undefined) {
      return {
        ok: false,
        problem: invalidSelection(
          `names ${TOOL_GROUPS[outside].id}, which this credential was not issued with: it may select among ${idsOf(allowed)}`,
        ),
      };
    }
  }
  return { ok: true, groups };
}

function idsOf(groups: ReadonlySet<Group>): string {
  return groups.size === 0 ? 'no group' : [...groups].map((g) => TOOL_GROUPS[g].id).join(', ');
}

function invalidSelection(rule: string): string {
  return `Invalid params: the MCP URL's \`${TOOLS_PARAMETER}\` query parameter ${rule}`;
}

/** The `tools/list` result's tools for a selection: the selected groups' tools, in catalogue order. */
export function selectedTools<D>(catalogue: Catalogue<D>, selection: ToolSelection): McpToolListing[] {
  if (selection === undefined) return [...catalogue.listing];
  return catalogue.listing.filter((t) => {
    const group = catalogue.byName.get(t.name)?.group;
    return group !== undefined && selection.has(group);
  });
}

/**
 * Refuses a call of a tool the connection did not select, naming the group that holds it and the
 * URL that selects it too: the tool exists, so "unknown tool" would send the agent looking for it.
 * A tool the catalogue does not have is left for the call to refuse as unknown.
 */
export function requireSelected<D>(
  catalogue: Catalogue<D>,
  selection: ToolSelection,
  name: string,
  issued?: readonly string[],
): void {
  if (selection === undefined) return;
  const group = catalogue.byName.get(name)?.group;
  if (group === undefined || selection.has(group)) return;
  const id = TOOL_GROUPS[group].id;
  const selected = [...selection].map((g) => TOOL_GROUPS[g].id);
  const allowed = credentialGroups(issued);
  if (allowed !== undefined && !allowed.has(group)) {
    // No URL gives this tool to this credential: only a credential issued with the group does.
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `${name} is in the tool group ${id}, which this credential was not issued with (it was issued with ${idsOf(allowed)}); ` +
        'a credential issued with that group is needed to use it',
      { tool: name, tool_group: id, selected_groups: selected },
    );
  }
  throw new ProtocolError(
    ProtocolErrorCode.InvalidParams,
    `${name} is in the tool group ${id}, which this connection did not select (it selected ${selected.join(', ')}); ` +
      `connect with ?${TOOLS_PARAMETER}=${[...selected, id].join(',')} on the MCP URL to use it`,
    { tool: name, tool_group: id, selected_groups: selected },
  );
}
