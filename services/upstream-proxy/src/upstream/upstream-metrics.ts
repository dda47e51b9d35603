/** The upstream-proxy's own metrics: the request budget to the platform and how the platform answered. */
import { Counter, Gauge, registry } from '@adsmcp/runtime/metrics';

export const budgetRemaining = new Gauge({
  name: 'adsmcp_upstream_budget_remaining',
  help: 'Requests left in the ad account’s budget to the platform after its latest take.',
  labelNames: ['account_id'] as const,
  registers: [registry],
});

export const budgetRefusals = new Counter({
  name: 'adsmcp_upstream_budget_refusals_total',
  help: 'Calls refused because the ad account’s request budget was used up.',
  registers: [registry],
});

export const rateLimited = new Counter({
  name: 'adsmcp_upstream_rate_limited_total',
  help: 'Platform answers with HTTP 429 (rate limited).',
  registers: [registry],
});

export const upstreamResponses = new Counter({
  name: 'adsmcp_upstream_responses_total',
  help: 'Platform answers by HTTP status.',
  labelNames: ['status'] as const,
  registers: [registry],
});
