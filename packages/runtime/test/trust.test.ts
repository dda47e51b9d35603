import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  actorName,
  createPrincipalSigner,
  createPrincipalVerifier,
  generatePrincipalKeys,
  type Principal,
} from '../src/principal.ts';
import { ISSUERS, type ServiceName, TRUST_GRAPH, type Trust, trustedKeys } from '../src/trust.ts';
import { EDITOR } from './fixtures.ts';

const SERVICES = Object.keys(TRUST_GRAPH) as ServiceName[];

describe('the trust table', () => {
  test('every edge is accepted as the table says, on each of its channels', async () => {
    for (const service of SERVICES) {
      for (const edge of TRUST_GRAPH[service]) {
        const keys = await generatePrincipalKeys();
        const issuer = ISSUERS[edge.issuer];
        const verifier = await createPrincipalVerifier({ [issuer]: keys.publicKeyPem }, service);
        const signer = await createPrincipalSigner(keys.privateKeyPem, issuer);
        for (const via of edge.via) {
          const principal: Principal = { ...EDITOR, scopes: [...edge.scopes], via };
          assert.deepEqual(
            await verifier.verify(await signer.sign(principal, service), (edge as Trust).methods?.[0]),
            principal,
            `${service} ← ${issuer} via ${via}`,
          );
        }
      }
    }
  });

  test('a worker may not claim the gateway’s channels, nor the gateway the worker’s', async () => {
    const gateway = await generatePrincipalKeys();
    const changes = await generatePrincipalKeys();
    const verifier = await createPrincipalVerifier(
      { [ISSUERS.gateway]: gateway.publicKeyPem, [ISSUERS.changes]: changes.publicKeyPem },
      'upstream-proxy',
    );
    const asWorker = await createPrincipalSigner(changes.privateKeyPem, ISSUERS.changes);
    const asGateway = await createPrincipalSigner(gateway.privateKeyPem);
    await assert.rejects(
      verifier.verify(await asWorker.sign({ ...EDITOR, via: 'dashboard' }, 'upstream-proxy')),
      {
        message: 'principal token from adsmcp-changes may not claim channel dashboard',
      },
    );
    await assert.rejects(
      verifier.verify(await asGateway.sign({ ...EDITOR, via: 'worker' }, 'upstream-proxy')),
      {
        message: 'principal token from adsmcp-gateway may not claim channel worker',
      },
    );
  });

  test('a worker trusted for one call is refused any other call of the service, naming it', async () => {
    const marketing = await generatePrincipalKeys();
    const verifier = await createPrincipalVerifier(
      { [ISSUERS.marketing]: marketing.publicKeyPem },
      'changes',
    );
    const signer = await createPrincipalSigner(marketing.privateKeyPem, ISSUERS.marketing);
    const worker: Principal = { ...EDITOR, scopes: ['write'], via: 'worker' };
    const token = await signer.sign(worker, 'changes');
    assert.deepEqual(await verifier.verify(token, 'changes.v1.WebhooksService/RecordWebhookEvent'), worker);
    // The same token again (now cached) is refused for another call, and for none named.
    await assert.rejects(verifier.verify(token, 'changes.v1.ChangesService/RecordApprovedChange'), {
      message:
        'principal token from adsmcp-marketing may not call changes.v1.ChangesService/RecordApprovedChange',
    });
    await assert.rejects(verifier.verify(token), { message: /may not call \(no call named\)/ });
  });

  test('the changes service acts for a caller at the marketing service only in the three calls of an ad batch, on the caller’s channel', async () => {
    const changes = await generatePrincipalKeys();
    const verifier = await createPrincipalVerifier({ [ISSUERS.changes]: changes.publicKeyPem }, 'marketing');
    const signer = await createPrincipalSigner(changes.privateKeyPem, ISSUERS.changes);
    const caller: Principal = { ...EDITOR, scopes: ['read', 'write'], via: 'mcp' };
    const forCaller = await signer.sign(caller, 'marketing');
    for (const call of [
      'MarketingService/GetMarketingItem',
      'AssetService/FindSourceImages',
      'AssetService/SaveSourceImages',
    ])
      assert.deepEqual(await verifier.verify(forCaller, `marketing.v1.${call}`), caller);
    await assert.rejects(verifier.verify(forCaller, 'marketing.v1.AssetService/GetCampaignAssetContent'), {
      message:
        'principal token from adsmcp-changes may not call marketing.v1.AssetService/GetCampaignAssetContent',
    });
    // Its own worker still reads any call, with the read scope alone.
    const worker: Principal = { ...EDITOR, role: 'viewer', scopes: ['read'], via: 'worker' };
    const own = await signer.sign(worker, 'marketing');
    assert.deepEqual(await verifier.verify(own, 'marketing.v1.AssetService/GetCampaignAssetContent'), worker);
    await assert.rejects(verifier.verify(await signer.sign({ ...worker, scopes: ['write'] }, 'marketing')), {
      message: 'principal token from adsmcp-changes may not claim scope write',
    });
  });

  test('an issuer’s edges into one service are on channels that do not overlap', () => {
    for (const service of SERVICES) {
      const seen = new Set<string>();
      for (const edge of TRUST_GRAPH[service] as readonly Trust[])
        for (const via of edge.via) {
          const key = `${edge.issuer} via ${via}`;
          assert.ok(!seen.has(key), `${service} trusts ${key} twice`);
          seen.add(key);
        }
    }
  });

  test('a worker that may only read here is refused a token claiming write, naming the scope', async () => {
    const optimizer = await generatePrincipalKeys();
    const verifier = await createPrincipalVerifier(
      { [ISSUERS.optimizer]: optimizer.publicKeyPem },
      'marketing',
    );
    const signer = await createPrincipalSigner(optimizer.privateKeyPem, ISSUERS.optimizer);
    const reader: Principal = { ...EDITOR, role: 'viewer', scopes: ['read'], via: 'worker' };
    assert.deepEqual(await verifier.verify(await signer.sign(reader, 'marketing')), reader);
    await assert.rejects(
      verifier.verify(await signer.sign({ ...reader, scopes: ['read', 'write'] }, 'marketing')),
      {
        message: 'principal token from adsmcp-optimizer may not claim scope write',
      },
    );
  });

  test('a key for an issuer the table does not let a service accept is refused before any token', async () => {
    const keys = await generatePrincipalKeys();
    await assert.rejects(createPrincipalVerifier({ [ISSUERS.changes]: keys.publicKeyPem }, 'optimizer'), {
      message: 'the trust table does not let optimizer accept adsmcp-changes',
    });
    await assert.rejects(createPrincipalVerifier({ 'adsmcp-elsewhere': keys.publicKeyPem }, 'changes'), {
      message: 'the trust table does not let changes accept adsmcp-elsewhere',
    });
  });

  test('a service’s keys are read from the variables the table names; an unset optional key leaves its issuer out', () => {
    assert.deepEqual(trustedKeys('marketing', { PRINCIPAL_PUBLIC_KEY: 'g', OPTIMIZER_PUBLIC_KEY: 'o' }), {
      'adsmcp-gateway': 'g',
      'adsmcp-optimizer': 'o',
    });
    assert.deepEqual(trustedKeys('gateway', {}), {});
    assert.throws(() => trustedKeys('changes', { OPTIMIZER_PUBLIC_KEY: 'o' }), {
      name: 'ConfigError',
      message: 'PRINCIPAL_PUBLIC_KEY is required: changes trusts gateway',
    });
  });
});

test('actor names: as a change records it, as a standard does, and as a competitor source’s owner', () => {
  const person: Principal = { ...EDITOR, userId: 'u-1', credentialId: 'c-1', via: 'mcp' };
  const command: Principal = { ...EDITOR, userId: null, credentialId: 'c-2', via: 'operator' };
  assert.equal(actorName(person), 'user:u-1 via mcp (c-1)');
  assert.equal(actorName(command), 'operator:c-2');
  assert.equal(actorName(person, 'channel'), 'user:u-1 via mcp');
  assert.equal(actorName(command, 'channel'), 'operator:c-2');
  assert.equal(actorName(person, 'member'), 'u-1');
  assert.equal(actorName(command, 'member'), 'credential:c-2');
});
