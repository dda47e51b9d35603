/** Undo: a prepared change that reverts an applied one, reviewed, approved and applied like any change. */
import { type PrepareRevertResponse, RevertService } from '@adsmcp/proto/changes/v1/revert_pb';
import type { GatewayDeps } from '../../deps.ts';
import { onBehalfOf } from '../../deps.ts';
import type { ToolContext, ToolRow } from '../catalogue.ts';
import { CHANGE_OUTPUT, changeView } from '../change-view.ts';
import { inputFromRequest } from '../input-schema.ts';
import { PREPARE_TEXT } from './platform-arguments.ts';

export const prepareRevert: ToolRow<GatewayDeps> = {
  name: 'ads_prepare_revert',
  title: 'Prepare reverting an applied change',
  group: 'Campaign creation',
  behavior: 'prepare',
  features: [],
  description:
    'Prepares the change that reverts an applied change (change_id), planned from what that change recorded: an ad ' +
    'or ad group update is reverted by an update back to the fields as they were before it; an ad group pause or ' +
    'activation by the opposite status change; an ad group create by archiving that ad group; an ad batch by ' +
    'archiving the ad group it created, its campaign and ads staying paused as the job created them (the platform ' +
    'has no campaign archive, and an archived ad group’s ads cannot serve). A change made by a published optimizer ' +
    'proposal is reverted by what it did. An archive cannot be reverted: archiving is final on the platform. The ' +
    'objects are read first and the revert is refused if any moved since the change was applied, naming the object ' +
    'and each field that moved (prepare a change against its current state instead). Only an applied change can be ' +
    'reverted, and not while an earlier revert of it is prepared, approved or applying (it is named). The revert ' +
    'names the change it reverts in reverts_change_id, and that change lists it in reverted_by. ' +
    PREPARE_TEXT,
  input: inputFromRequest(RevertService.method.prepareRevert.input, {
    change_id: { description: 'The applied change to revert (ads_list_changes lists them).' },
    reason: {
      description:
        'Why it is reverted, shown to the reviewer in the summary (one line, at most 500 characters).',
    },
  }),
  output: CHANGE_OUTPUT,
  example: { change_id: '5b1e2c3d-4f5a-4b6c-8d7e-9f0a1b2c3d4e', reason: 'The new headline underperforms' },
  idempotent: false,
  route: {
    kind: 'rpc',
    method: RevertService.method.prepareRevert,
    view: (res, { deps }) => changeView((res as PrepareRevertResponse).change, deps.publicUrl),
  },
};

/**
 * ads_preflight_change for ads_prepare_revert: the revert planned as the prepare would (the same
 * reads and refusals), recorded nowhere. Its arguments name no account: the change they name must
 * be of the account planned on.
 */
export const revertPreflight = {
  tool: prepareRevert,
  noCurrent:
    'does not apply to ads_prepare_revert: a revert is planned from the change it reverts and the objects as the ' +
    'platform shows them now, which it must read to refuse a revert of an object that moved; leave current out',
  accountFromArgs: false,
  async plan(ctx: ToolContext<GatewayDeps>, args: Record<string, unknown>, accountId: string) {
    const { plan } = await ctx.deps.clientOf(RevertService).planRevert(
      {
        changeId: String(args.change_id),
        accountId,
        reason: typeof args.reason === 'string' ? args.reason : '',
      },
      onBehalfOf(ctx.caller.principal),
    );
    if (plan === undefined) throw new Error('the changes service planned the revert without a plan');
    return { plan, notes: [] };
  },
};

export const revertTools: readonly ToolRow<GatewayDeps>[] = [prepareRevert];
