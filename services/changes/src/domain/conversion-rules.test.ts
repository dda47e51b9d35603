import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { planChange } from './plan.ts';

const create = (objectType: string, body: Record<string, unknown>) =>
  planChange({ objectType, effect: 'create', body, live: undefined, accountName: 'Shop' });

const setting = {
  name: 'Purchases',
  event_type: 'purchase',
  attribution_window_days: 7,
  source_ids: ['px_1'],
};

function refuses(fn: () => unknown, message: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof InvalidArgumentError, String(err));
    assert.match((err as Error).message, message);
    return true;
  });
}

test('creating a pixel is summarised by its fields', () => {
  assert.equal(
    create('conversion_source', { name: 'Checkout pixel', client_type: 'web' }).summary,
    'Create conversion source "Checkout pixel" on Shop: client_type "web"',
  );
});

test('an event setting is checked as the platform checks it and summarised by its fields', () => {
  assert.equal(
    create('conversion_event_setting', setting).summary,
    'Create conversion event setting "Purchases" on Shop: event_type "purchase"; attribution_window_days 7; source_ids ["px_1"]',
  );
  refuses(
    () => create('conversion_event_setting', { ...setting, event_type: 'checkout' }),
    /`body.event_type` must be one of page_visit, .*custom \(got "checkout"\)/,
  );
  refuses(
    () => create('conversion_event_setting', { ...setting, event_type: 'custom' }),
    /`body.custom_event_name` is required when event_type is "custom"/,
  );
  refuses(
    () => create('conversion_event_setting', { ...setting, custom_event_name: 'x' }),
    /`body.custom_event_name` is only for event_type "custom"/,
  );
  refuses(
    () => create('conversion_event_setting', { ...setting, attribution_window_days: 3 }),
    /`body.attribution_window_days` must be 1, 7, 28 days \(got 3\)/,
  );
  refuses(
    () => create('conversion_event_setting', { ...setting, source_ids: ['px_1', 'px_1'] }),
    /`body.source_ids\[1\]` repeats "px_1"/,
  );
  refuses(
    () =>
      create('conversion_event_setting', {
        ...setting,
        source_ids: Array.from({ length: 21 }, (_, i) => `px_${i}`),
      }),
    /must name 1 to 20 pixels \(got 21\)/,
  );
});

test('a pixel or an event setting can only be created', () => {
  refuses(
    () =>
      planChange({
        objectType: 'conversion_source',
        effect: 'archive',
        body: {},
        live: {},
        accountName: 'S',
      }),
    /effect for conversion source must be one of create/,
  );
});
