import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { testPrincipal } from '@adsmcp/testkit/service-harness';
import type { GatewayDeps } from '../deps.ts';
import { ToolFailure } from '../mcp/tool-failure.ts';
import type { Caller } from './catalogue.ts';
import { type PlatformRead, readPlatform } from './platform.ts';

const caller = { principal: testPrincipal() } as Caller;

/** Deps whose upstream-proxy answers every call with a 200 and `body`. */
const answering = (body: unknown) =>
  ({
    upstream: { call: async () => ({ status: 200, bodyJson: JSON.stringify(body), attempts: 1 }) },
  }) as unknown as GatewayDeps;

const read = (shape: PlatformRead['shape']): PlatformRead => ({
  accountId: '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90',
  path: '/ads',
  query: {},
  notFound: 'no such ads',
  shape,
});

describe('readPlatform and the shape of the platform’s answer', () => {
  test('passes on a list page and a report as the platform gives them', async () => {
    const page = { data: [{ id: 'ad_1' }], paging: { after: 'c2VxOjE', before: null, has_more: true } };
    assert.deepEqual(await readPlatform(caller, answering(page), read('list')), page);
    const report = { data: [{ clicks: 1 }], currency: 'USD' };
    assert.deepEqual(await readPlatform(caller, answering(report), read('report')), {
      data: report.data,
      rest: { currency: 'USD' },
    });
  });

  test('refuses an answer its published result shape would not admit as upstream_error, not as a result', async () => {
    const answers: [PlatformRead['shape'], unknown][] = [
      ['list', { data: [{ id: 'ad_1' }], paging: {} }],
      ['list', { data: [{ id: 'ad_1' }], paging: { has_more: 'yes' } }],
      ['list', { data: [{ id: 'ad_1' }], paging: { has_more: true, after: 12 } }],
      ['list', { data: ['ad_1'], paging: { has_more: false } }],
      ['report', { data: [null] }],
      ['report', { data: [], paging: { after: null } }],
    ];
    for (const [shape, body] of answers) {
      await assert.rejects(readPlatform(caller, answering(body), read(shape)), (err: unknown) => {
        assert.ok(err instanceof ToolFailure, String(err));
        assert.equal(err.code, 'upstream_error');
        assert.match(
          err.message,
          /the ad platform answered GET \/ads with an unexpected shape; try again later/,
        );
        return true;
      });
    }
  });
});
