import assert from 'node:assert/strict';
import { test } from 'node:test';
import { handlerErrorResponse, plainToolCall } from './plain-call.ts';

const call = (params: unknown, extra: object = {}) => ({
  jsonrpc: '2.0',
  id: 7,
  method: 'tools/call',
  params,
  ...extra,
});

test('a single 2025-era tools/call with a name and arguments takes the plain path', () => {
  assert.deepEqual(plainToolCall(call({ name: 'a', arguments: { x: 1 } }), '2025-11-25'), {
    id: 7,
    name: 'a',
    args: { x: 1 },
  });
  assert.deepEqual(plainToolCall({ ...call({ name: 'a' }), id: 'r1' }, '2025-03-26'), {
    id: 'r1',
    name: 'a',
    args: undefined,
  });
});

test('anything else is left to the SDK', () => {
  const version = '2025-11-25';
  const leftToSdk: [string, unknown, string | undefined][] = [
    ['no version header', call({ name: 'a' }), undefined],
    ['the modern revision', call({ name: 'a' }), '2026-07-28'],
    ['an unknown version', call({ name: 'a' }), '1999-01-01'],
    ['a batch', [call({ name: 'a' })], version],
    ['another method', { ...call({}), method: 'tools/list' }, version],
    ['a notification', { jsonrpc: '2.0', method: 'tools/call', params: { name: 'a' } }, version],
    ['a fractional id', { ...call({ name: 'a' }), id: 1.5 }, version],
    ['a null id', { ...call({ name: 'a' }), id: null }, version],
    ['another jsonrpc version', { ...call({ name: 'a' }), jsonrpc: '1.0' }, version],
    ['an extra member', call({ name: 'a' }, { extra: true }), version],
    ['_meta (a progress token, an envelope)', call({ name: 'a', _meta: { progressToken: 1 } }), version],
    ['a task request', call({ name: 'a', task: {} }), version],
    ['params that are not an object', call([]), version],
    ['a name that is not a string', call({ name: 3 }), version],
    ['arguments that are not an object', call({ name: 'a', arguments: [1] }), version],
  ];
  for (const [what, body, header] of leftToSdk) assert.equal(plainToolCall(body, header), undefined, what);
});

test("a handler's error becomes the JSON-RPC error the SDK would send", () => {
  assert.deepEqual(handlerErrorResponse(1, Object.assign(new Error('unknown tool: x'), { code: -32602 })), {
    jsonrpc: '2.0',
    id: 1,
    error: { code: -32602, message: 'unknown tool: x' },
  });
  assert.deepEqual(handlerErrorResponse('a', new Error('boom')), {
    jsonrpc: '2.0',
    id: 'a',
    error: { code: -32603, message: 'boom' },
  });
  assert.deepEqual(
    handlerErrorResponse(2, Object.assign(new Error('gone'), { code: -32002, data: { u: 1 } })),
    {
      jsonrpc: '2.0',
      id: 2,
      error: { code: -32602, message: 'gone', data: { u: 1 } },
    },
  );
});
