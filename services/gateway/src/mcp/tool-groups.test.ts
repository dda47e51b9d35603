import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gatewayCatalogue } from '../catalogue/tools/index.ts';
import { requireSelected, selectedTools, TOOL_GROUP_IDS, TOOL_GROUPS, toolSelection } from './tool-groups.ts';

const catalogue = gatewayCatalogue();

test('the tool groups partition the catalogue: every listed tool is in exactly one group, and no group is empty', () => {
  const seen = new Map<string, string>();
  for (const id of TOOL_GROUP_IDS) {
    const selection = toolSelection(`/mcp?tools=${id}`);
    assert.ok(selection.ok);
    const tools = selectedTools(catalogue, selection.groups);
    assert.ok(tools.length > 0, `group ${id} holds no tool`);
    for (const t of tools) {
      assert.equal(seen.get(t.name), undefined, `${t.name} is in ${seen.get(t.name)} and ${id}`);
      seen.set(t.name, id);
    }
  }
  assert.deepEqual([...seen.keys()].sort(), catalogue.listing.map((t) => t.name).sort());
  assert.equal(new Set(TOOL_GROUP_IDS).size, Object.keys(TOOL_GROUPS).length, 'group ids are distinct');
});

test('a URL without the tools parameter selects every tool; with it, the named groups, comma-separated or repeated', () => {
  const all = toolSelection('/mcp');
  assert.ok(all.ok);
  assert.equal(selectedTools(catalogue, all.groups).length, catalogue.listing.length);
  const two = toolSelection('/mcp?tools=Marketing,%20accounts-and-reporting&tools=marketing');
  assert.ok(two.ok);
  const names = selectedTools(catalogue, two.groups).map((t) => t.name);
  assert.ok(names.includes('ads_list_accounts') && names.includes('ads_save_marketing_item'));
  assert.ok(!names.includes('ads_list_campaigns'));
});

test('a tools parameter naming no group, or one that does not exist, is refused naming the parameter and the groups', () => {
  const unknown = toolSelection('/mcp?tools=marketing,acounts');
  assert.equal(unknown.ok, false);
  assert.match(
    unknown.ok ? '' : unknown.problem,
    /the MCP URL's `tools` query parameter must name tool groups separated by commas: accounts-and-reporting, .*conversions-and-audiences \(got "acounts"\)/,
  );
  const empty = toolSelection('/mcp?tools=');
  assert.match(empty.ok ? '' : empty.problem, /`tools` query parameter .* \(got none\)/);
});

test('calling a tool outside the selection names its group and the URL that selects it too', () => {
  const selection = toolSelection('/mcp?tools=marketing');
  assert.ok(selection.ok);
  assert.doesNotThrow(() => requireSelected(catalogue, selection.groups, 'ads_save_marketing_item'));
  assert.throws(
    () => requireSelected(catalogue, selection.groups, 'ads_list_accounts'),
    (err: Error & { data?: unknown }) => {
      assert.match(
        err.message,
        /^ads_list_accounts is in the tool group accounts-and-reporting, which this connection did not select \(it selected marketing\); connect with \?tools=marketing,accounts-and-reporting on the MCP URL to use it$/,
      );
      assert.deepEqual(err.data, {
        tool: 'ads_list_accounts',
        tool_group: 'accounts-and-reporting',
        selected_groups: ['marketing'],
      });
      return true;
    },
  );
});
