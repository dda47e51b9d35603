/**
 * The planning RPCs: money as exact micros and local times as instants, both in the terms of the
 * ad account (its currency, its time zone), read through the upstream-proxy. They change nothing.
 */
import type { ChangesService } from '@adsmcp/proto/changes/v1/changes_pb';
import { principalOf } from '@adsmcp/runtime/connect-server';
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { isUuid } from '@adsmcp/runtime/ids';
import type { ServiceImpl } from '@connectrpc/connect';
import { creativeReport } from '../domain/ad-rules.ts';
import { planMoney } from '../domain/money.ts';
import { planSchedule } from '../domain/schedule.ts';
import { readableAccount, type Upstream } from '../planning/platform-reads.ts';

type PlanningHandlers = Pick<
  ServiceImpl<typeof ChangesService>,
  'planMoney' | 'planSchedule' | 'validateCreative'
>;

function checkAccountId(accountId: string): void {
  if (!isUuid(accountId)) throw new InvalidArgumentError(`account_id must be a UUID (got "${accountId}")`);
}

export function planningHandlers(upstream: Upstream): PlanningHandlers {
  return {
    async planMoney(req, ctx) {
      checkAccountId(req.accountId);
      const account = await readableAccount(upstream, principalOf(ctx), req.accountId);
      const plan = planMoney({
        amount: req.amount,
        currency: req.currency,
        purpose: req.purpose,
        objective: req.objective,
        wireFormat: req.wireFormat,
        accountName: account.name,
        accountCurrency: account.currency,
      });
      return { accountId: account.accountId, ...plan };
    },

    async planSchedule(req, ctx) {
      checkAccountId(req.accountId);
      const account = await readableAccount(upstream, principalOf(ctx), req.accountId);
      const plan = planSchedule({
        startLocal: req.startLocal,
        endLocal: req.endLocal,
        ambiguity: req.ambiguity,
        timeZone: account.timeZone,
      });
      return { accountId: account.accountId, ...plan };
    },

    async validateCreative(req, ctx) {
      checkAccountId(req.accountId);
      await readableAccount(upstream, principalOf(ctx), req.accountId);
      if (req.creative === undefined) throw new InvalidArgumentError('creative is required');
      const { type, title, body, targetUrl, fileId } = req.creative;
      // The ad rules read the platform's field names.
      return creativeReport({ type, title, body, target_url: targetUrl, file_id: fileId });
    },
  };
}
