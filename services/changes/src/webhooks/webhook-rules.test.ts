import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, test } from 'node:test';
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import {
  checkEvents,
  checkFormat,
  type EventFacts,
  jsonBody,
  reviewUrl,
  signature,
  slackBody,
} from './webhook-rules.ts';

const facts: EventFacts = {
  deliveryId: '6f0c3c9e-5d1a-5b8e-9a53-0c7a1f0c2b11',
  event: 'change.rejected',
  occurredAt: new Date('2026-11-28T10:40:00.123Z'),
  workspaceId: 'ws-1',
  change: {
    change_id: 'c-1',
    account_id: 'a-1',
    tool: 'ads_update_ad',
    summary: 'name "A & <B>" → "C"',
    error: null,
    reject_reason: 'not now',
  },
  reviewUrl: reviewUrl('https://ads.example.com/base/ignored', 'c-1'),
};

describe('webhook bodies and signatures', () => {
  test('the JSON body names the change, its status and review page, and nothing about who acted', () => {
    const body = JSON.parse(jsonBody(facts));
    assert.deepEqual(body, {
      id: facts.deliveryId,
      event: 'change.rejected',
      occurred_at: '2026-11-28T10:40:00.123Z',
      workspace_id: 'ws-1',
      change: {
        id: 'c-1',
        status: 'rejected',
        summary: 'name "A & <B>" → "C"',
        account_id: 'a-1',
        tool: 'ads_update_ad',
        review_url: 'https://ads.example.com/dashboard/changes/c-1',
        reject_reason: 'not now',
      },
    });
  });

  test('the Slack body escapes what Slack gives meaning and links the review page', () => {
    assert.deepEqual(JSON.parse(slackBody(facts)), {
      text: '*A change was rejected*: name "A &amp; &lt;B&gt;" → "C"\n<https://ads.example.com/dashboard/changes/c-1|Review it in the dashboard>',
    });
  });

  test('the signature is t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">', () => {
    const expected = createHmac('sha256', 'whsec_x').update('1795860000.{"a":1}').digest('hex');
    assert.equal(signature('whsec_x', 1795860000, '{"a":1}'), `t=1795860000,v1=${expected}`);
  });

  test('a registration names known events once each and a known format, else the field and the rule', () => {
    assert.deepEqual(checkEvents(['change.applied', 'change.failed']), ['change.applied', 'change.failed']);
    assert.throws(
      () => checkEvents([]),
      (e: Error) => e instanceof InvalidArgumentError && /^events must name/.test(e.message),
    );
    assert.throws(
      () => checkEvents(['change.applied', 'change.sent']),
      /events\[1\] must be one of .* \(got "change\.sent"\)/,
    );
    assert.throws(
      () => checkEvents(['change.failed', 'change.failed']),
      /events\[1\] names change\.failed a second time/,
    );
    assert.equal(checkFormat(''), 'json');
    assert.equal(checkFormat('slack'), 'slack');
    assert.throws(() => checkFormat('xml'), /format must be json or slack \(got "xml"\)/);
  });
});
