import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ChangeSchema, ChangeStatus } from '@adsmcp/proto/changes/v1/changes_pb';
import { ProposalSchema, ProposalStatus } from '@adsmcp/proto/optimizer/v1/reviews_pb';
import { create } from '@bufbuild/protobuf';
import { reviewText } from '../admin-review.ts';
import { changeDetailHtml, changeListHtml } from './change-pages.ts';
import { proposalDetailHtml } from './proposal-pages.ts';
import { microsToDecimal, moneyHtml, shownJsonParts, summaryHtml, valueHtml } from './shown-values.ts';

/** `shop.example.com` with a Cyrillic "а" (U+0430). */
const LOOKALIKE = 'https://shop.ex\u0430mple.com/spring';
const UNICODE_HOST = 'shop.ex\u0430mple.com';
const A_LABEL = 'shop.xn--exmple-4nf.com';
const NINE_MARKS = '\u0301\u0336\u0317\u035C\u0300\u0316\u0334\u0327\u0350';

const change = (body: object, before: object = {}, summary = 'Update ad') =>
  create(ChangeSchema, {
    changeId: '6f1c2a8e-1111-4222-8333-944445555666',
    accountId: 'acc-1',
    state: ChangeStatus.PREPARED,
    summary,
    operation: { method: 'POST', path: '/ads/ad_1', bodyJson: JSON.stringify(body) },
    targetBeforeJson: JSON.stringify(before),
    digest: 'abc123',
    preparedAt: '2026-01-01T00:00:00Z',
    preparedBy: 'credential:x',
  });

const pageOf = (c: ReturnType<typeof change>) =>
  changeDetailHtml(c, new Map(), 'csrf', true, { conflicts: [] });

/** The text of HTML as a person reads it, roughly: tags dropped, the few entities used decoded. */
const textOf = (html: string) =>
  html
    .replace(/<[^>]*>/g, '')
    .replaceAll('&quot;', '"')
    .replaceAll('&#39;', "'")
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&amp;', '&');

/** Whether every place `text` shows the Unicode host has the A-label just before it. */
function unicodeHostOnlyBesideALabel(text: string): boolean {
  const at = [...text.matchAll(new RegExp(UNICODE_HOST.replaceAll('.', '\\.'), 'g'))].map((m) => m.index);
  return at.length > 0 && at.every((i) => text.slice(Math.max(0, i - 80), i).includes(A_LABEL));
}

describe('a URL whose host passes for another', () => {
  test('the review page shows the A-label, the Unicode form beside it and a warning, in the table and the request', () => {
    const html = pageOf(
      change(
        { creative: { target_url: LOOKALIKE } },
        { creative: { target_url: 'https://shop.example.com/' } },
      ),
    );
    const table = html.slice(html.indexOf('id="what-changes"'), html.indexOf('Exact request'));
    assert.ok(table.includes(`<code>&quot;https://${A_LABEL}/spring&quot;</code>`), table);
    const payload = html.slice(html.indexOf('id="payload"'), html.indexOf('</pre>'));
    assert.ok(payload.includes(`&quot;https://${A_LABEL}/spring&quot;`), payload);
    for (const part of [table, payload]) {
      assert.match(
        part,
        /role="alert"[^>]*>⚠ Look-alike host: shop\.xn--exmple-4nf\.com is shown as &quot;shop\.exаmple\.com&quot;: mixed Latin and Cyrillic letters; looks like shop\.example\.com\./,
      );
    }
    assert.ok(unicodeHostOnlyBesideALabel(textOf(html)), textOf(html));
    assert.match(html, /id="payload-note"/, 'the page says the request is shown as it must be read');
    assert.doesNotMatch(html, /<a [^>]*href="https?:/, 'no URL of the change is a link');
  });

  test('a host in another script that passes for nothing is shown in ASCII with its Unicode form, without an alarm', () => {
    const html = valueHtml('https://münchen.de/x');
    assert.ok(html.includes('&quot;https://xn--mnchen-3ya.de/x&quot;'), html);
    assert.match(html, /data-host-note>host xn--mnchen-3ya\.de is shown as &quot;münchen\.de&quot;</);
    assert.doesNotMatch(html, /role="alert"/);
  });

  test('a plain ASCII URL and ordinary JSON are shown byte for byte', () => {
    const json = JSON.stringify({
      creative: { target_url: 'https://shop.example.com/a?b=1', title: 'a "b" \\ c\n' },
    });
    const parts = shownJsonParts(json);
    assert.equal(parts.map((p) => p.text).join(''), json);
    assert.ok(parts.every((p) => p.host === undefined));
  });

  test('the optimizer proposal page shows the variant’s landing page the same way', () => {
    const p = create(ProposalSchema, {
      proposalId: '7e4b5f60-2222-4333-8444-955556666777',
      state: ProposalStatus.PENDING_REVIEW,
      revision: 1,
      variant: { baseAdId: 'ad_1', name: 'Spring  test ', title: 'Sale', body: 'Now', targetUrl: LOOKALIKE },
    });
    const html = proposalDetailHtml(
      p,
      {
        live: {
          name: `Base${NINE_MARKS}`,
          status: 'active',
          title: 'Sale',
          body: 'Now',
          targetUrl: 'https://shop.example.com/',
        },
      },
      'csrf',
      true,
    );
    const proposed = html.slice(html.indexOf('Target URL'));
    assert.ok(
      proposed.includes(`https://${A_LABEL}/spring</span><strong class="host-warning" role="alert"`),
      proposed,
    );
    assert.ok(unicodeHostOnlyBesideALabel(textOf(html)));
    assert.match(html, /<h2 data-proposal-name><span class="v">Spring␣␣test␣<\/span><\/h2>/);
    assert.match(html, /data-legend>␣ is a space</);
    assert.match(html, /Base ad: <span class="v">Base⟨9 combining marks⟩<\/span>/);
  });

  test('admin approve prints the A-label, the Unicode form and the warning on the URL’s lines', () => {
    const text = reviewText(
      change(
        { creative: { target_url: LOOKALIKE } },
        { creative: { target_url: 'https://shop.example.com/' } },
      ),
    );
    const warning = `(WARNING, look-alike host: ${A_LABEL} is shown as "${UNICODE_HOST}": mixed Latin and Cyrillic letters; looks like shop.example.com; the link goes to ${A_LABEL})`;
    const lines = text.split('\n');
    assert.ok(
      lines.includes(
        `  creative.target_url: "https://shop.example.com/" -> "https://${A_LABEL}/spring" ${warning}`,
      ),
      text,
    );
    assert.ok(lines.includes(`      "target_url": "https://${A_LABEL}/spring" ${warning}`), text);
    assert.ok(unicodeHostOnlyBesideALabel(text));
  });
});

describe('spaces and summaries', () => {
  test('a title’s repeated and trailing spaces show as ␣ in the table and the request, with the legend', () => {
    const html = pageOf(change({ creative: { title: 'Sale  now ' } }, { creative: { title: 'Sale' } }));
    const table = html.slice(html.indexOf('id="what-changes"'), html.indexOf('Exact request'));
    assert.ok(table.includes('<code>&quot;Sale␣␣now␣&quot;</code>'), table);
    assert.match(table, /<p class="legend" data-legend>␣ is a space<\/p>/);
    const payload = html.slice(html.indexOf('id="payload"'));
    assert.ok(
      payload.includes('{&quot;creative&quot;:{&quot;title&quot;:&quot;Sale␣␣now␣&quot;}}</pre>'),
      payload,
    );
    assert.ok(payload.includes('</pre><p class="legend" data-legend>␣ is a space</p>'), payload);
  });

  test('a summary keeps the space tokens the changes service wrote; any other bracket or hidden character is spelled out', () => {
    const summary =
      'Update ad "Sale\u202E" (ad_1): creative.title "10⟨U+00A0⟩€␣off⟨U+2423⟩" → "⟨U+202E⟩x" (␣ is a space)';
    assert.equal(
      summaryHtml(summary),
      'Update ad &quot;Sale⟨U+202E⟩&quot; (ad_1): creative.title &quot;10⟨U+00A0⟩€␣off⟨U+2423⟩&quot; → &quot;⟨U+27E8⟩U+202E⟨U+27E9⟩x&quot; (␣ is a space)',
    );
    const list = changeListHtml([change({ name: 'x' }, {}, summary)], new Map());
    assert.ok(
      list.includes(
        '<td class="summary"><div class="clamp" title="The whole summary is on the change\'s page">Update ad &quot;Sale⟨U+202E⟩&quot;',
      ),
      list,
    );
    const terminal = reviewText(change({ name: 'x' }, {}, summary));
    assert.ok(terminal.includes('"10⟨U+00A0⟩€␣off⟨U+2423⟩" → "⟨U+27E8⟩U+202E⟨U+27E9⟩x"'), terminal);
  });

  test('admin approve shows a value’s spaces as ␣ and says what ␣ means', () => {
    const text = reviewText(change({ creative: { title: 'Sale  now ' } }, { creative: { title: 'Sale' } }));
    assert.ok(text.split('\n').includes('  creative.title: "Sale" -> "Sale␣␣now␣"'), text);
    assert.ok(text.split('\n').includes('(␣ is a space)'), text);
  });
});

describe('stacked combining marks from the platform', () => {
  test('more than 4 marks on one character are shown as a token, in the table, the summary and the terminal', () => {
    const name = `Sale${NINE_MARKS}!`;
    const c = change({ name: 'Clean' }, { name }, `Update ad "${name}" (ad_1): name "${name}" → "Clean"`);
    const html = pageOf(c);
    assert.ok(!html.includes(NINE_MARKS), 'no run of 9 marks reaches the page');
    assert.match(html, /<h2 class="summary">Update ad &quot;Sale⟨9 combining marks⟩!&quot;/);
    assert.ok(html.includes('<code>&quot;Sale⟨9 combining marks⟩!&quot;</code>'), html);
    const text = reviewText(c);
    assert.ok(!text.includes(NINE_MARKS));
    assert.ok(text.includes('name: "Sale⟨9 combining marks⟩!" -> "Clean"'), text);
  });

  test('real text that stacks up to 4 marks is left as written', () => {
    const burmese = 'မြို့';
    const vietnamese = 'Tiếng Việt'.normalize('NFD');
    assert.ok(valueHtml(burmese).includes(burmese));
    assert.ok(valueHtml(vietnamese).includes(vietnamese));
  });
});

describe('money in the account currency', () => {
  test('micros become an exact decimal amount, whatever their size', () => {
    assert.equal(microsToDecimal(12_500_000), '12.50');
    assert.equal(microsToDecimal(1), '0.000001');
    assert.equal(microsToDecimal(-2_000_000n), '-2.00');
    assert.equal(microsToDecimal('9223372036854775807'), '9223372036854.775807');
  });

  test('an amount names its currency for the page to format in the viewer’s locale, and shows the micros where exactness matters', () => {
    assert.equal(
      moneyHtml(12_500_000, 'EUR', { exact: true }),
      '<data value="12500000" data-currency="EUR">EUR 12.50</data> <span class="muted nowrap">(12500000 micros)</span>',
    );
    assert.equal(moneyHtml(5, 'euro'), '0.000005 <span class="muted">(currency unknown)</span>');
    assert.equal(moneyHtml(undefined, 'EUR'), '');
  });
});
