import assert from 'node:assert/strict';
import { test } from 'node:test';
import { actorHtml, actorText, parseActor } from './change-actors.ts';

const ALICE = '0b7c2f0e-4d4a-4f49-9a59-6f2b8f3c1d10';
const CREDENTIAL = '5e0a9c43-1f7e-4b8e-8d3e-2a8c6b1f9e77';
const people = new Map([[ALICE, 'alice@x.example']]);

test('a person is named by email with the channel in words, never by credential id', () => {
  const cases: [string, string][] = [
    [`user:${ALICE} via mcp (${CREDENTIAL})`, 'alice@x.example, through an MCP client'],
    [`user:${ALICE} via dashboard (dashboard:${ALICE})`, 'alice@x.example, in the dashboard'],
    [`user:${ALICE} via operator (operator:alice@x.example)`, 'alice@x.example, by operator command'],
    ['operator:ops@x.example', 'ops@x.example, by operator command'],
    [`mcp:${CREDENTIAL}`, 'An MCP client'],
  ];
  for (const [recorded, shown] of cases) {
    assert.equal(actorText(recorded, people), shown, recorded);
    assert.ok(!actorText(recorded, people).includes(CREDENTIAL));
  }
});

test('a user id the workspace does not know is not shown as an id', () => {
  const stranger = 'ffffffff-4d4a-4f49-9a59-6f2b8f3c1d10';
  assert.equal(
    actorText(`user:${stranger} via mcp (${CREDENTIAL})`, people),
    'a former member of this workspace, through an MCP client',
  );
  assert.equal(actorText('something else', people), 'someone not recorded');
});

test('user ids are matched whatever their case', () => {
  assert.equal(parseActor(`user:${ALICE.toUpperCase()} via mcp (x)`).userId, ALICE);
});

test('the page keeps the recorded text, less the credential, only in an escaped title attribute', () => {
  const html = actorHtml(`user:${ALICE} via mcp (<${CREDENTIAL}>)`, people);
  assert.equal(
    html,
    `<span class="actor" title="user:${ALICE} via mcp">alice@x.example, through an MCP client</span>`,
  );
  assert.ok(!html.includes(CREDENTIAL));
  assert.equal(
    actorHtml(`operator:<op>@x.example`, people).includes('title="operator:&lt;op&gt;@x.example"'),
    true,
    'and escapes what it keeps',
  );
  assert.equal(actorHtml('', people), '');
});
