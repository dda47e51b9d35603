import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { archiveLoosenings, standardLoosenings } from './standard-loosening.ts';
import type { StandardData } from './standards-rules.ts';

const loosen = (current: StandardData, proposed: StandardData) =>
  standardLoosenings('standard', current, proposed);

describe('a save that loosens a standard is named, rule by rule', () => {
  test('each loosening the issue lists is named with what it lets through', () => {
    assert.deepEqual(
      loosen(
        {
          naming_prefix: 'ACME-',
          allowed_domains: ['shop.example.com'],
          utm: { utm_source: 'ads', utm_campaign: 'spring' },
          operating_start: '2026-03-01',
          operating_end: '2026-03-31',
        },
        {
          allowed_domains: ['shop.example.com', 'elsewhere.test'],
          utm: { utm_source: 'ads' },
          operating_start: '2026-02-01',
          operating_end: '2026-03-31',
        },
      ),
      [
        'removes the naming prefix "ACME-": names need no prefix',
        'adds allowed domain elsewhere.test',
        'drops the required utm_campaign=spring',
        'widens the operating window from 2026-03-01..2026-03-31 to 2026-02-01..2026-03-31',
      ],
    );
    assert.deepEqual(loosen({ allowed_domains: ['shop.example.com'] }, {}), [
      'removes the allowed domains shop.example.com: links to any domain would pass',
    ]);
    assert.deepEqual(loosen({ naming_prefix: 'ACME-' }, { naming_prefix: 'BETA-' }), [
      'changes the naming prefix from "ACME-" to "BETA-": names starting with "BETA-" but not "ACME-" would pass',
    ]);
    assert.deepEqual(loosen({ utm: { utm_medium: 'cpc' } }, { utm: { utm_medium: 'email' } }), [
      'changes the required utm_medium from cpc to email',
    ]);
    assert.deepEqual(loosen({ operating_end: '2026-03-31' }, {}), [
      'widens the operating window from no start..2026-03-31 to no start..no end',
    ]);
  });

  test('tightening only is no loosening: a longer prefix, fewer domains, a new UTM value, a narrower window', () => {
    assert.deepEqual(
      loosen(
        {
          naming_prefix: 'ACME-',
          allowed_domains: ['example.com', 'other.test'],
          operating_end: '2026-12-31',
        },
        {
          naming_prefix: 'ACME-EU-',
          allowed_domains: ['example.com'],
          utm: { utm_source: 'ads' },
          operating_start: '2026-03-01',
          operating_end: '2026-06-30',
          guidance: 'New guidance is advice, not a rule.',
        },
      ),
      [],
    );
    assert.deepEqual(loosen({}, { allowed_domains: ['example.com'], naming_prefix: 'X' }), []);
  });

  test('a domain compares in its ASCII form, and a host listed by name inside a listed domain vouches for it', () => {
    assert.deepEqual(
      loosen({ allowed_domains: ['bücher.example'] }, { allowed_domains: ['xn--bcher-kva.example'] }),
      [],
    );
    assert.deepEqual(
      loosen({ allowed_domains: ['example.com'] }, { allowed_domains: ['example.com', 'shop.example.com'] }),
      ['lists shop.example.com by name, which vouches for it even where it looks like another host'],
    );
  });

  test('templates loosen nothing; archiving a standard loosens every rule it has', () => {
    assert.deepEqual(standardLoosenings('template', { naming_prefix: 'A' }, {}), []);
    assert.deepEqual(archiveLoosenings('template', 'Spring', { naming_prefix: 'A' }), []);
    assert.deepEqual(archiveLoosenings('standard', 'House', { naming_prefix: 'ACME-' }), [
      'archives standard "House": its rules stop applying',
      'removes the naming prefix "ACME-": names need no prefix',
    ]);
    assert.deepEqual(archiveLoosenings('standard', 'Advice', { guidance: 'Be kind.' }), [
      'archives standard "Advice": its rules stop applying',
    ]);
  });
});

// Properties: a save is a loosening exactly when some value the rule judges passes the proposed
// standard and not the one in force, over small universes where every case can be listed.

const day = (n: number) => `2026-03-${String(n).padStart(2, '0')}`;
const anEnd = fc.option(fc.integer({ min: 5, max: 25 }), { nil: undefined });
const windowData = fc
  .tuple(anEnd, anEnd)
  .map(([a, b]) => (a !== undefined && b !== undefined && a > b ? [b, a] : [a, b]))
  .map(
    ([a, b]): StandardData => ({
      ...(a === undefined ? {} : { operating_start: day(a) }),
      ...(b === undefined ? {} : { operating_end: day(b) }),
    }),
  );
const inWindow = (d: StandardData, n: number) =>
  (d.operating_start === undefined || day(n) >= String(d.operating_start)) &&
  (d.operating_end === undefined || day(n) <= String(d.operating_end));

const DOMAINS = ['example.com', 'shop.example.com', 'a.shop.example.com', 'other.test', 'shop.other.test'];
const HOSTS = [...DOMAINS, 'x.example.com', 'elsewhere.test'];
const domainData = fc
  .subarray(DOMAINS)
  .map((allowed_domains): StandardData => (allowed_domains.length === 0 ? {} : { allowed_domains }));
const listOf = (d: StandardData) => (d.allowed_domains ?? []) as string[];
const allows = (d: StandardData, host: string) =>
  listOf(d).length === 0 || listOf(d).some((x) => host === x || host.endsWith(`.${x}`));

const PREFIXES = ['A', 'AB', 'ABC', 'B'];
const prefixData = fc
  .option(fc.constantFrom(...PREFIXES), { nil: undefined })
  .map((p): StandardData => (p === undefined ? {} : { naming_prefix: p }));
const NAMES = [...PREFIXES, ''].map((p) => `${p}x`);
const named = (d: StandardData, name: string) =>
  d.naming_prefix === undefined || name.startsWith(String(d.naming_prefix));

describe('loosening is exactly "something newly passes"', () => {
  test('operating window: loosened iff a day passes the proposed window and not the one in force', () => {
    fc.assert(
      fc.property(windowData, windowData, (current, proposed) => {
        const newly = Array.from({ length: 31 }, (_, i) => i + 1).some(
          (n) => inWindow(proposed, n) && !inWindow(current, n),
        );
        assert.equal(loosen(current, proposed).length > 0, newly);
      }),
    );
  });

  test('allowed domains: loosened iff a host newly passes, or a host is newly listed by name', () => {
    fc.assert(
      fc.property(domainData, domainData, (current, proposed) => {
        const newlyAllowed = HOSTS.some((h) => allows(proposed, h) && !allows(current, h));
        const newlyListed =
          listOf(current).length > 0 && listOf(proposed).some((d) => !listOf(current).includes(d));
        assert.equal(loosen(current, proposed).length > 0, newlyAllowed || newlyListed);
      }),
    );
  });

  test('naming prefix: loosened iff a name passes the proposed prefix and not the one in force', () => {
    fc.assert(
      fc.property(prefixData, prefixData, (current, proposed) => {
        const newly = NAMES.some((n) => named(proposed, n) && !named(current, n));
        assert.equal(loosen(current, proposed).length > 0, newly);
      }),
    );
  });

  test('a standard saved unchanged loosens nothing', () => {
    fc.assert(
      fc.property(windowData, domainData, prefixData, (w, d, p) => {
        const data = { ...w, ...d, ...p, utm: { utm_source: 'ads' } };
        assert.deepEqual(loosen(data, structuredClone(data)), []);
      }),
    );
  });
});
