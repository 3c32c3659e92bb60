// The pseudonym scopes a client may ask for: which thirdPartyId and dataUsageId values, and whether
// organisation-wide pseudonyms. Bound to the client's config, carried in its tokens, checked on
// every call, so a partner can compute its own pseudonyms only (docs/identity.md).

import { DpgError } from '../core/errors.ts';
import type { RequestContext } from '../core/types.ts';
import type { PseudonymScopeConfig } from '../config/types.ts';

/** A client configured without `pseudonymScope` (or a token without the claim, or no token): no ids, not org-wide. */
export const DEFAULT_PSEUDONYM_SCOPE: PseudonymScopeConfig = Object.freeze({ thirdPartyIds: [0], dataUsageIds: [0], organizationWide: false });

/** Every scope: for operators' own tools (the demo client of the default config). */
export const ANY_PSEUDONYM_SCOPE: PseudonymScopeConfig = Object.freeze({ thirdPartyIds: '*', dataUsageIds: '*', organizationWide: true });

/** The access token claim (JSON): `{ third_party_ids: number[] | "*", data_usage_ids: …, organization_wide: boolean }`. */
export const PSEUDONYM_SCOPE_CLAIM = 'pseudonym_scope';

const INT32_MAX = 2147483647;

export function pseudonymScopeClaim(scope: PseudonymScopeConfig): Record<string, unknown> {
  return {
    third_party_ids: scope.thirdPartyIds === '*' ? '*' : [...scope.thirdPartyIds],
    data_usage_ids: scope.dataUsageIds === '*' ? '*' : [...scope.dataUsageIds],
    organization_wide: scope.organizationWide,
  };
}

function idList(value: unknown): readonly number[] | '*' | undefined {
  if (value === '*') return '*';
  if (!Array.isArray(value) || value.length > 1024) return undefined;
  return value.every((n) => Number.isInteger(n) && n >= 0 && n <= INT32_MAX) ? (value as number[]) : undefined;
}

/** The claim read back; absent → DEFAULT_PSEUDONYM_SCOPE; malformed → undefined (the token is refused). */
export function pseudonymScopeFromClaim(claim: unknown): PseudonymScopeConfig | undefined {
  if (claim === undefined) return DEFAULT_PSEUDONYM_SCOPE;
  if (claim === null || typeof claim !== 'object' || Array.isArray(claim)) return undefined;
  const c = claim as Record<string, unknown>;
  const thirdPartyIds = idList(c.third_party_ids);
  const dataUsageIds = idList(c.data_usage_ids);
  if (thirdPartyIds === undefined || dataUsageIds === undefined || typeof c.organization_wide !== 'boolean') return undefined;
  return { thirdPartyIds, dataUsageIds, organizationWide: c.organization_wide };
}

const allows = (ids: readonly number[] | '*', id: number): boolean => ids === '*' || ids.includes(id);

/**
 * Throws FORBIDDEN unless the request's scope values are all allowed. An absent id is checked as 0
 * ("not given", as gRPC sends it); every value is checked, even those an org-wide scope does not
 * mix into keys, because manifest conditions may still test them.
 */
export function checkPseudonymScope(scope: PseudonymScopeConfig, ctx: RequestContext): void {
  const denied: { location: string; reason: string }[] = [];
  if (!allows(scope.thirdPartyIds, ctx.thirdPartyId ?? 0)) denied.push({ location: 'thirdPartyId', reason: 'not allowed for this client' });
  if (!allows(scope.dataUsageIds, ctx.dataUsageId ?? 0)) denied.push({ location: 'dataUsageId', reason: 'not allowed for this client' });
  if (ctx.isDataConsistentAcrossOrganization === true && !scope.organizationWide) {
    denied.push({ location: 'isDataConsistentAcrossOrganization', reason: 'not allowed for this client' });
  }
  if (denied.length > 0) {
    throw new DpgError('FORBIDDEN', `The client may not use this pseudonym scope (${denied.map((d) => d.location).join(', ')})`, { errors: denied });
  }
}
