import assert from 'node:assert/strict';
import { test } from 'node:test';
import { argumentsOf, requestFrom } from '../rpc-mapping.ts';
import { validate } from '../schema.ts';
import { allTools } from './index.ts';

test('every RPC-mapped tool has valid example arguments that survive the trip into its RPC request unchanged', () => {
  const mapped = allTools.filter((t) => t.rpc !== undefined);
  for (const tool of mapped) {
    const { request, example } = tool.rpc as NonNullable<typeof tool.rpc>;
    assert.deepEqual(validate(tool.input, example), [], `${tool.name}: its example is not valid input`);
    assert.deepEqual(
      argumentsOf(request, requestFrom(request, example)),
      example,
      `${tool.name}: arguments changed on the way`,
    );
  }
});

test('tool names are unique, snake_case and prefixed ads_', () => {
  const names = allTools.map((t) => t.name);
  assert.equal(new Set(names).size, names.length);
  for (const n of names) assert.match(n, /^ads_[a-z][a-z0-9_]*$/);
});
