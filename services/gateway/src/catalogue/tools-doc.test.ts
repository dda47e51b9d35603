import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { gatewayCatalogue } from './tools/index.ts';
import { renderToolReference } from './tools-doc.ts';

test('docs/tools.md is the reference the catalogue writes (npm run docs)', () => {
  const committed = readFileSync(new URL('../../../../docs/tools.md', import.meta.url), 'utf8');
  assert.equal(
    committed,
    renderToolReference(gatewayCatalogue()),
    'docs/tools.md is out of date: run npm run docs',
  );
});

test('the reference names every tool with its arguments and an example', () => {
  const catalogue = gatewayCatalogue();
  const doc = renderToolReference(catalogue);
  for (const name of catalogue.byName.keys()) {
    assert.ok(doc.includes(`### \`${name}\``), `${name} is missing`);
  }
  assert.match(
    doc,
    /\| `body.creative.target_url` \| string, at most 2048 chars, URL matching `\^https\?:\/\/` \|/,
  );
});
