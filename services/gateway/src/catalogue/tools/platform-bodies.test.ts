import assert from 'node:assert/strict';
import { test } from 'node:test';
import { platformBodyOf } from '@adsmcp/runtime/platform-bodies';
import { allTools } from './index.ts';

test('every prepare tool that sends a body publishes the platform body the changes service holds its changes to', () => {
  const withBody = allTools.flatMap((row) =>
    row.route.kind === 'prepare' && row.route.body !== undefined ? [{ row, route: row.route }] : [],
  );
  assert.ok(withBody.length >= 7, 'the prepare tools that send a body are found');
  for (const { row, route } of withBody) {
    const declared = platformBodyOf(route.object, route.effect);
    assert.ok(
      declared !== undefined,
      `${row.name}: no platform body is declared for ${route.object} ${route.effect}`,
    );
    const published = (row.input.json.properties as Record<string, unknown>)[route.body as string];
    assert.deepEqual(published, declared.json, `${row.name} publishes its own ${route.body}`);
  }
});
