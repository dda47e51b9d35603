import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UrlElicitationRequiredError } from '@modelcontextprotocol/server';
import {
  declaresUrlElicitation,
  legacyElicitation,
  modernAnswer,
  REVIEW_INPUT_KEY,
} from './person-in-the-loop.ts';
import { headerProblem, taskRequestMethod } from './task-route.ts';
import { toolError } from './tool-call.ts';

const CHANGE = '5b1e2c3d-4f5a-4b6c-8d7e-9f0a1b2c3d4e';
const REVIEW = `https://ads.example.com/dashboard/changes/${CHANGE}`;
const awaiting = toolError('failed_precondition', 'the change is not approved yet', {
  status: 'prepared',
  change_id: CHANGE,
  review_url: REVIEW,
});
const rejected = toolError('failed_precondition', 'the change was rejected', {
  status: 'rejected',
  change_id: CHANGE,
  review_url: REVIEW,
});
const envelope = (capabilities: unknown) => ({ 'io.modelcontextprotocol/clientCapabilities': capabilities });

test('a client declares URL elicitation only with an elicitation.url object', () => {
  assert.equal(declaresUrlElicitation({ elicitation: { url: {} } }), true);
  assert.equal(declaresUrlElicitation({ elicitation: { url: {}, form: {} } }), true);
  assert.equal(declaresUrlElicitation({ elicitation: {} }), false, 'form mode only');
  assert.equal(declaresUrlElicitation({ elicitation: { url: true } }), false);
  assert.equal(declaresUrlElicitation(undefined), false);
});

test('2026-07-28: an apply awaiting a person is a URL elicitation of the review page for a client that declared it', () => {
  const answer = modernAnswer(
    'ads_apply_change',
    awaiting,
    envelope({ elicitation: { url: {} } }),
    undefined,
  );
  assert.equal(answer.resultType, 'input_required');
  const request = (
    answer as { inputRequests: Record<string, { method: string; params: Record<string, unknown> }> }
  ).inputRequests[REVIEW_INPUT_KEY];
  assert.equal(request?.method, 'elicitation/create');
  assert.equal(request?.params.mode, 'url');
  assert.equal(request?.params.url, REVIEW);
  assert.match(String(request?.params.message), /awaits a person's decision/);
});

test('2026-07-28: the tool error stays for a client without URL elicitation, another status, another tool, or a person who declined the page', () => {
  const url = envelope({ elicitation: { url: {} } });
  assert.equal(
    modernAnswer('ads_apply_change', awaiting, envelope({ elicitation: {} }), undefined),
    awaiting,
  );
  assert.equal(modernAnswer('ads_apply_change', rejected, url, undefined), rejected);
  assert.equal(modernAnswer('ads_get_change', awaiting, url, undefined), awaiting);
  for (const action of ['decline', 'cancel'])
    assert.equal(
      modernAnswer('ads_apply_change', awaiting, url, { [REVIEW_INPUT_KEY]: { action } }),
      awaiting,
    );
  // Accepted (the page was opened) while the person has not decided yet: asked again.
  const again = modernAnswer('ads_apply_change', awaiting, url, { [REVIEW_INPUT_KEY]: { action: 'accept' } });
  assert.equal(again.resultType, 'input_required');
});

test('2025-era: an apply awaiting a person is the -32042 error naming the review page, only for a client that declared URL elicitation', () => {
  const err = legacyElicitation('ads_apply_change', awaiting, true);
  assert.ok(err instanceof UrlElicitationRequiredError);
  assert.equal(err.code, -32042);
  assert.deepEqual(
    err.elicitations.map((e) => [e.mode, e.url, e.elicitationId]),
    [['url', REVIEW, `change-${CHANGE}`]],
  );
  assert.ok(err.message.includes(REVIEW));
  assert.equal(legacyElicitation('ads_apply_change', awaiting, false), undefined);
  assert.equal(legacyElicitation('ads_apply_change', rejected, true), undefined);
});

test('tasks requests are told apart, and their routing headers must match the body', () => {
  assert.equal(taskRequestMethod({ method: 'tasks/get', params: {} }), 'tasks/get');
  assert.equal(taskRequestMethod({ method: 'tasks/list' }), 'tasks/list');
  assert.equal(taskRequestMethod({ method: 'tools/call' }), undefined);
  assert.equal(taskRequestMethod([{ method: 'tasks/get' }]), undefined);

  const params = { taskId: CHANGE };
  assert.equal(
    headerProblem({ 'mcp-method': 'tasks/get', 'mcp-name': CHANGE }, 'tasks/get', params),
    undefined,
  );
  assert.equal(
    headerProblem(
      { 'mcp-method': 'tasks/get', 'mcp-name': `=?base64?${Buffer.from(CHANGE).toString('base64')}?=` },
      'tasks/get',
      params,
    ),
    undefined,
  );
  assert.match(String(headerProblem({}, 'tasks/get', params)), /required Mcp-Method header is absent/);
  assert.match(
    String(headerProblem({ 'mcp-method': 'tasks/cancel', 'mcp-name': CHANGE }, 'tasks/get', params)),
    /Mcp-Method header names tasks\/cancel/,
  );
  assert.match(
    String(headerProblem({ 'mcp-method': 'tasks/get' }, 'tasks/get', params)),
    /required Mcp-Name header is absent/,
  );
  assert.match(
    String(headerProblem({ 'mcp-method': 'tasks/get', 'mcp-name': 'other' }, 'tasks/get', params)),
    /Mcp-Name header names "other"/,
  );
});
