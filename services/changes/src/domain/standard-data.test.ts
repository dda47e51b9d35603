import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkStandard, forbiddenTemplateFields, normalisedKey } from './standard-data.ts';

const refusalOf = (template: unknown) => {
  try {
    checkStandard({ name: 'Template', kind: 'template', data: { template } });
  } catch (err) {
    return (err as Error).message;
  }
  return undefined;
};

describe('template keys are compared whatever their style', () => {
  test('camelCase, PascalCase, kebab-case, upper case and spaced keys are spelled as the lists spell them', () => {
    const spelled: [string, string][] = [
      ['accessToken', 'access_token'],
      ['AdAccountID', 'ad_account_id'],
      ['APIKey', 'api_key'],
      ['X-Api-Key', 'x_api_key'],
      [' token', 'token'],
      ['account_id ', 'account_id'],
      ['Client Secret', 'client_secret'],
      ['ＣａｍｐａｉｇｎＩｄ', 'campaign_id'],
      ['tok\u200Ben', 'token'],
    ];
    for (const [key, normal] of spelled) assert.equal(normalisedKey(key), normal, key);
  });

  test('authorization and remote identity fields in any style are refused, each named by its path', () => {
    const message = refusalOf({
      accessToken: 'abc',
      refreshToken: 'r',
      clientSecret: 's',
      campaignId: 'c1',
      adAccountId: 'a',
      ' token': 'abc',
      'account_id ': 'x',
      accesstoken: 'y',
      title: 'Spring',
    });
    assert.equal(
      message,
      'a template must not hold authorization or remote identity fields: ' +
        [
          'data.template.accessToken (an authorization field)',
          'data.template.refreshToken (an authorization field)',
          'data.template.clientSecret (an authorization field)',
          'data.template.campaignId (a remote identity field)',
          'data.template.adAccountId (a remote identity field)',
          'data.template[" token"] (an authorization field)',
          'data.template["account_id "] (a remote identity field)',
          'data.template.accesstoken (an authorization field)',
        ].join(', '),
    );
  });

  test('forbidden keys are found at every depth, in objects and in arrays', () => {
    assert.deepEqual(
      forbiddenTemplateFields({
        creative: { adGroupId: 'g', assets: [{ title: 'ok' }, { 'File-ID': 'f' }] },
        headers: [{ Authorization: 'Bearer x' }],
        nested: { deeper: { parentCampaignId: 'p', 'oauth2 token': 't' } },
      }),
      [
        'data.template.creative.adGroupId (a remote identity field)',
        'data.template.creative.assets[1]["File-ID"] (a remote identity field)',
        'data.template.headers[0].Authorization (an authorization field)',
        'data.template.nested.deeper.parentCampaignId (a remote identity field)',
        'data.template.nested.deeper["oauth2 token"] (an authorization field)',
      ],
    );
    assert.deepEqual(forbiddenTemplateFields({ 'tok\u200Ben': 'x' }), [
      'data.template["tok\\u200Ben"] (an authorization field)',
    ]);
  });

  test('a template nested deeper than can be checked is refused, not passed unchecked', () => {
    let template: Record<string, unknown> = { accessToken: 'hidden' };
    for (let i = 0; i < 40; i++) template = { inner: template };
    assert.match(refusalOf(template) ?? '', /nested more than 32 levels deep, so it cannot be checked/);
  });

  test('ordinary creative fields are kept', () => {
    assert.equal(
      refusalOf({
        title: 'Spring',
        body: 'Sale',
        headline: 'x',
        displayUrl: 'https://example.com',
        bidAmount: 1,
        identity: 'brand',
        video: { idea: 'y', guid: 'z' },
      }),
      undefined,
    );
  });
});

describe('allowed domains', () => {
  const save = (allowed_domains: unknown[]) => () =>
    checkStandard({ name: 'Domains', kind: 'standard', data: { allowed_domains } });

  test('a domain in ASCII form or in Unicode is kept, as written', () => {
    assert.equal(save(['example.com', 'xn--bcher-kva.example', 'bücher.example'])(), 'standard');
  });

  test('one that is no domain name with an ASCII form is refused, named by its position', () => {
    assert.throws(save(['example.com', 'xn--zz.com', 'https://shop.example.com/']), {
      message:
        '`data.allowed_domains[1]` must be a domain name such as example.com or bücher.example, without scheme, port or path, that has an ASCII form (IDNA) (got "xn--zz.com"); ' +
        '`data.allowed_domains[2]` must be a domain name such as example.com or bücher.example, without scheme, port or path, that has an ASCII form (IDNA) (got "https://shop.example.com/")',
    });
  });
});
