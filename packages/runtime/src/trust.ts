/**
 * Who trusts whom: the one table of which principal-token issuers each service accepts, on which
 * channels, with which scopes, and which environment variable holds the issuer's public key. Every
 * service's verifier is built from it (`createPrincipalVerifier`, `startService`), and
 * docs/architecture.md ("Who trusts whom") shows it; a peer a service should accept is added here
 * and nowhere else.
 */
import { ConfigError } from './config.ts';
import type { Channel, Scope } from './principal.ts';

/** The issuers that sign principal tokens, by the name the table uses. */
export const ISSUERS = {
  /** The gateway, for the agent, person or operator it authenticated. */
  gateway: 'adsmcp-gateway',
  /** The changes service's own worker and reads (its key is CHANGES_PRIVATE_KEY). */
  changes: 'adsmcp-changes',
  /** The optimizer's own worker and checks (its key is OPTIMIZER_PRIVATE_KEY). */
  optimizer: 'adsmcp-optimizer',
  /** The marketing service's worker (its key is MARKETING_PRIVATE_KEY). */
  marketing: 'adsmcp-marketing',
} as const;

export type IssuerName = keyof typeof ISSUERS;

export const GATEWAY_ISSUER = ISSUERS.gateway;
export const CHANGES_ISSUER = ISSUERS.changes;
export const OPTIMIZER_ISSUER = ISSUERS.optimizer;
export const MARKETING_ISSUER = ISSUERS.marketing;

/**
 * One edge of the trust graph: a service accepts `issuer`'s tokens as far as this says. An issuer
 * may have several edges into one service, on channels that do not overlap: a token's channel
 * picks its edge (a worker's own reads on one, calls made on behalf of a caller on another).
 */
export interface Trust {
  issuer: IssuerName;
  /** The channels a token from this issuer may claim. */
  via: readonly Channel[];
  /** The scopes a token from this issuer may carry; a token claiming another is refused. */
  scopes: readonly Scope[];
  /** The configuration variable holding the issuer's Ed25519 public key (SPKI PEM). */
  keyEnv: 'PRINCIPAL_PUBLIC_KEY' | 'CHANGES_PUBLIC_KEY' | 'OPTIMIZER_PUBLIC_KEY' | 'MARKETING_PUBLIC_KEY';
  /**
   * The only calls (`<package>.<Service>/<Method>`) a token from this issuer may make here; absent
   * for every call. For a peer that needs one call of a service whose other calls it must not make.
   */
  methods?: readonly string[];
  /** Without the key the service does not start (required), or does not accept this issuer (optional). */
  key: 'required' | 'optional';
  /** What the issuer does here, for the docs and for whoever reads the table. */
  why: string;
}

const FROM_GATEWAY: Trust = {
  issuer: 'gateway',
  via: ['mcp', 'dashboard', 'operator'],
  scopes: ['read', 'write'],
  keyEnv: 'PRINCIPAL_PUBLIC_KEY',
  key: 'required',
  why: 'every call an agent, a person or an operator makes',
};

/**
 * The trust graph, by the service that verifies (the tokens' audience). The gateway authenticates
 * agents and people itself and the ads sandbox its admin token: neither accepts principal tokens.
 */
export const TRUST_GRAPH = {
  gateway: [],
  'ads-sandbox': [],
  changes: [
    FROM_GATEWAY,
    {
      issuer: 'optimizer',
      via: ['worker'],
      scopes: ['read', 'write'],
      keyEnv: 'OPTIMIZER_PUBLIC_KEY',
      key: 'optional',
      why: 'records the changes that publish proposals a person approved (RecordApprovedChange)',
    },
    {
      issuer: 'marketing',
      via: ['worker'],
      scopes: ['write'],
      keyEnv: 'MARKETING_PUBLIC_KEY',
      key: 'optional',
      methods: ['changes.v1.WebhooksService/RecordWebhookEvent'],
      why: 'tells the workspace’s webhooks a performance import finished (RecordWebhookEvent, and no other call)',
    },
  ],
  marketing: [
    FROM_GATEWAY,
    {
      issuer: 'changes',
      via: ['worker'],
      scopes: ['read'],
      keyEnv: 'CHANGES_PUBLIC_KEY',
      key: 'optional',
      why: 'reads the campaign images a change pins and uploads (GetCampaignAssetContent)',
    },
    {
      // The caller's own principal, channel and scopes as the gateway signed them for the changes
      // service, so that this service's access rules hold for the caller exactly as they would
      // for a call from the gateway.
      issuer: 'changes',
      via: ['mcp', 'dashboard', 'operator'],
      scopes: ['read', 'write'],
      keyEnv: 'CHANGES_PUBLIC_KEY',
      key: 'optional',
      methods: [
        'marketing.v1.MarketingService/GetMarketingItem',
        'marketing.v1.AssetService/FindSourceImages',
        'marketing.v1.AssetService/SaveSourceImages',
      ],
      why: 'prepares a saved ad batch on behalf of its caller: reads the batch, finds its source images and saves the missing ones (GetMarketingItem, FindSourceImages and SaveSourceImages, and no other call)',
    },
    {
      issuer: 'optimizer',
      via: ['worker'],
      scopes: ['read'],
      keyEnv: 'OPTIMIZER_PUBLIC_KEY',
      key: 'optional',
      why: 'checks the campaign assets an optimization variant names (GetCampaignAssets)',
    },
  ],
  optimizer: [FROM_GATEWAY],
  'upstream-proxy': [
    FROM_GATEWAY,
    {
      issuer: 'changes',
      via: ['worker'],
      scopes: ['read', 'write'],
      keyEnv: 'CHANGES_PUBLIC_KEY',
      key: 'optional',
      why: 'plans and re-reads changes, and applies the approved ones',
    },
    {
      issuer: 'optimizer',
      via: ['worker'],
      scopes: ['read'],
      keyEnv: 'OPTIMIZER_PUBLIC_KEY',
      key: 'optional',
      why: 'reads the ads and insights of a claimed review run’s snapshot (TakeSnapshot)',
    },
    {
      issuer: 'marketing',
      via: ['worker'],
      scopes: ['read'],
      keyEnv: 'MARKETING_PUBLIC_KEY',
      key: 'optional',
      methods: ['upstream.v1.UpstreamService/GetAccount', 'upstream.v1.UpstreamService/Call'],
      why: 'reads the account, ad groups and insights a performance report compares (GetAccount and Call, and no other call)',
    },
  ],
} as const satisfies Record<string, readonly Trust[]>;

export type ServiceName = keyof typeof TRUST_GRAPH;

/** The issuers `service` accepts, by their table name. */
export type TrustedBy<S extends ServiceName> = (typeof TRUST_GRAPH)[S][number]['issuer'];

function isServiceName(name: string): name is ServiceName {
  return Object.hasOwn(TRUST_GRAPH, name);
}

/**
 * The edges for tokens addressed to `audience`, by issuer (the signed `iss`). A name the table
 * does not know (a test's own service) accepts the gateway alone, as every service does.
 */
export function trustRules(audience: string): ReadonlyMap<string, readonly Trust[]> {
  const edges: readonly Trust[] = isServiceName(audience) ? TRUST_GRAPH[audience] : [FROM_GATEWAY];
  const rules = new Map<string, Trust[]>();
  for (const edge of edges) {
    const issuer = ISSUERS[edge.issuer];
    rules.set(issuer, [...(rules.get(issuer) ?? []), edge]);
  }
  return rules;
}

/** The edge of `edges` (one issuer's) that a token claiming channel `via` is held to, if any. */
export function edgeFor(edges: readonly Trust[] | undefined, via: string): Trust | undefined {
  return edges?.find((e) => (e.via as readonly string[]).includes(via));
}

/**
 * The public keys `service` verifies with, read from its configuration by the table's `keyEnv`
 * names: a required key that is missing is an error naming the variable; an optional one that is
 * unset leaves its issuer untrusted.
 */
export function trustedKeys(
  service: ServiceName,
  config: Readonly<Partial<Record<Trust['keyEnv'], string | undefined>>>,
): Record<string, string> {
  const keys: Record<string, string> = {};
  const edges: readonly Trust[] = TRUST_GRAPH[service];
  for (const edge of edges) {
    const pem = config[edge.keyEnv];
    if (pem === undefined || pem === '') {
      if (edge.key === 'required')
        throw new ConfigError(`${edge.keyEnv} is required: ${service} trusts ${edge.issuer}`);
      continue;
    }
    keys[ISSUERS[edge.issuer]] = pem;
  }
  return keys;
}
