import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ianaTimeZone, sameTimeZone } from './time-zone.ts';

test('a time zone keeps the name it was given, spelled as IANA spells it', () => {
  const cases: [string, string][] = [
    ['Asia/Kathmandu', 'Asia/Kathmandu'],
    ['asia/kathmandu', 'Asia/Kathmandu'],
    ['Europe/Kyiv', 'Europe/Kyiv'],
    ['Asia/Kolkata', 'Asia/Kolkata'],
    ['America/Nuuk', 'America/Nuuk'],
    ['Asia/Ho_Chi_Minh', 'Asia/Ho_Chi_Minh'],
    ['america/port-au-prince', 'America/Port-au-Prince'],
    ['utc', 'UTC'],
    ['Europe/Berlin', 'Europe/Berlin'],
    // An old name stays the old name: it is what the account was given.
    ['Asia/Calcutta', 'Asia/Calcutta'],
  ];
  for (const [given, kept] of cases) assert.equal(ianaTimeZone(given), kept, given);
});

test('what is not a time zone name is refused', () => {
  for (const given of ['', 'Mars/Olympus', 'Etc/Unknown', '+01:00', 'Europe/Berlin ', 'Berlin'])
    assert.equal(ianaTimeZone(given), undefined, given);
});

test('names of one zone are the same time zone, whatever their spelling', () => {
  assert.equal(sameTimeZone('Asia/Kathmandu', 'Asia/Katmandu'), true);
  assert.equal(sameTimeZone('Europe/Kyiv', 'europe/kiev'), true);
  assert.equal(sameTimeZone('Europe/Berlin', 'Europe/Paris'), false);
  assert.equal(sameTimeZone('Mars/Olympus', 'Mars/Olympus'), false);
});
