/** A workspace's connection to an ad account, and the rules a new one must meet. */

import { DomainError, InvalidArgumentError, NotFoundError } from '@adsmcp/runtime/errors';
import { ianaTimeZone, sameTimeZone } from '@adsmcp/runtime/time-zone';

/** A connection as the rest of the product sees it: never its credential. */
export interface Connection {
  accountId: string;
  workspaceId: string;
  name: string;
  currency: string;
  timeZone: string;
  canWrite: boolean;
  upstreamAccountId: string;
  createdAt: Date;
  /** When the platform credential expires, as the platform reported it; null when it did not say. */
  credentialExpiresAt: Date | null;
}

export interface NewConnection {
  name: string;
  currency: string;
  timeZone: string;
  canWrite: boolean;
  upstreamAccountId: string;
  upstreamCredential: string;
}

/** The ad account as the platform describes it. */
export interface PlatformAccount {
  id: string;
  name: string;
  currency: string;
  timeZone: string;
  /** When the credential the platform was asked with expires, when the platform says. */
  credentialExpiresAt?: Date;
}

const CURRENCY = /^[A-Z]{3}$/;
/** A bearer credential: visible ASCII only, since it travels in an HTTP header. */
const CREDENTIAL = /^[\x21-\x7e]{1,4096}$/;
const NAME_MAX = 200;
const UPSTREAM_ID_MAX = 255;

/** The request's connection already exists in the workspace. */
export class ConnectionExistsError extends DomainError {
  constructor(upstreamAccountId: string) {
    super(
      `upstream account ${upstreamAccountId} is already connected to this workspace; list accounts to find its account_id`,
      'already_exists',
    );
  }
}

/**
 * The workspace has no connection by that id. Said the same whether the id exists in another
 * workspace or nowhere, so it reveals nothing of other workspaces.
 */
export class AccountNotFoundError extends NotFoundError {
  constructor(accountId: string) {
    const shown = accountId.length > 64 ? `${accountId.slice(0, 64)}…` : accountId;
    super(`no ad account ${shown} in this workspace; ads_list_accounts lists them`);
  }
}

/**
 * validateNewConnection checks every field of a new connection and returns it with its time zone
 * spelled as IANA spells it (the name given, not an alias of it: see runtime's time-zone.ts); it throws an InvalidArgumentError naming the first field that is wrong.
 */
export function validateNewConnection(input: NewConnection): NewConnection {
  const { name, currency, timeZone, upstreamAccountId, upstreamCredential } = input;
  if (name.length < 1 || name.length > NAME_MAX || name.trim() === '') {
    throw new InvalidArgumentError(
      `name must be 1 to ${NAME_MAX} characters with at least one that is not blank`,
    );
  }
  if (!CURRENCY.test(currency)) {
    throw new InvalidArgumentError(
      `currency must be 3 uppercase letters, an ISO 4217 code such as USD (got "${currency}")`,
    );
  }
  const canonical = ianaTimeZone(timeZone);
  if (canonical === undefined) {
    throw new InvalidArgumentError(
      `time_zone must be an IANA time zone such as Europe/Berlin (got "${timeZone}")`,
    );
  }
  if (upstreamAccountId.trim() === '' || upstreamAccountId.length > UPSTREAM_ID_MAX) {
    throw new InvalidArgumentError(
      `upstream_account_id must be 1 to ${UPSTREAM_ID_MAX} characters, not blank`,
    );
  }
  if (upstreamCredential === '') {
    throw new InvalidArgumentError('upstream_credential is required: the API credential the platform issued');
  }
  if (!CREDENTIAL.test(upstreamCredential)) {
    throw new InvalidArgumentError('upstream_credential must be 1 to 4096 visible ASCII characters');
  }
  return { ...input, timeZone: canonical };
}

/**
 * checkPlatformAccount requires the account the credential opens to be the one the request names,
 * in the currency and time zone it states: money and dates are planned in those, so a connection
 * that disagreed with the platform would plan wrong amounts and days.
 */
export function checkPlatformAccount(input: NewConnection, platform: PlatformAccount): void {
  if (platform.id !== input.upstreamAccountId) {
    throw new InvalidArgumentError(
      `upstream_credential belongs to upstream account ${platform.id}, not to upstream_account_id ${input.upstreamAccountId}`,
    );
  }
  if (platform.currency !== input.currency) {
    throw new InvalidArgumentError(
      `currency ${input.currency} does not match the ad account's currency on the platform, ${platform.currency}`,
    );
  }
  if (!sameTimeZone(platform.timeZone, input.timeZone)) {
    throw new InvalidArgumentError(
      `time_zone ${input.timeZone} does not match the ad account's time zone on the platform, ${platform.timeZone}`,
    );
  }
}

/** How close to its expiry a credential is said to be expiring soon. */
export const CREDENTIAL_WARNING_DAYS = 14;

export type CredentialStatus = 'ok' | 'expiring_soon' | 'expired' | 'unknown';

/**
 * The health of a connection's platform credential at `now`: expired from its expiry on,
 * expiring_soon within CREDENTIAL_WARNING_DAYS of it, unknown when the platform did not say.
 */
export function credentialStatus(expiresAt: Date | null, now: Date): CredentialStatus {
  if (expiresAt === null) return 'unknown';
  const left = expiresAt.getTime() - now.getTime();
  if (left <= 0) return 'expired';
  return left <= CREDENTIAL_WARNING_DAYS * 86_400_000 ? 'expiring_soon' : 'ok';
}
