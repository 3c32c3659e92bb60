// Turns the job fields a door received (HTTP body, gRPC JobConfig, CLI flags, proxy route) into a
// validated JobSpec. One place, so every door accepts and rejects exactly the same things.

import { randomUUID } from 'node:crypto';
import { DpgError, type ValueFailure } from '../core/errors.ts';
import { REQUEST_ID_PATTERN, requestIdHoldsPersonalData } from './request-id.ts';
import {
  parseDataSetType,
  parseJobType,
  REVERSE_OF,
  type Claim,
  type DataSetType,
  type JobSpec,
  type RequestContext,
} from '../core/types.ts';

/** Job fields as a door received them: names as in the /api/protect body (camelCase). */
export interface RawJobRequest {
  manifestName?: unknown;
  jobType?: unknown;
  dataSetType?: unknown;
  countryCode?: unknown;
  dataOwningCountryCode?: unknown;
  dataUsageId?: unknown;
  thirdPartyId?: unknown;
  isDataConsistentAcrossOrganization?: unknown;
  snapshotDate?: unknown;
  matchingRule?: unknown;
  protectNullValues?: unknown;
  preserveStringLength?: unknown;
  useRestrictedText?: unknown;
  restrictedText?: unknown;
  silentMode?: unknown;
  executionContext?: unknown;
  apiType?: unknown;
  sqlDialect?: unknown;
  requestId?: unknown;
}

const COUNTRY = /^[A-Z]{2}$/;
/** A zone is required: a local time would select different key versions on hosts in different zones. */
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
/**
 * How far a snapshot date may lie ahead of this host's clock (clients' clocks differ a little); such
 * a date counts as now, so a key version is never selected before it is active here.
 */
export const SNAPSHOT_CLOCK_TOLERANCE_MS = 30_000;
const INT32_MAX = 2147483647;
const MAX_TEXT = 256;
const MAX_CLAIMS = 64;

/**
 * Validates raw job fields. Every problem is collected (field name and reason, never the value)
 * into one INVALID_REQUEST. `defaultDataSetType` applies when the door allows the field to be absent.
 * `thirdPartyId` and `dataUsageId` 0 mean "not given", as in gRPC's proto3 (docs/keys.md).
 * `snapshotDate` is for Reconstruct and Decrypt only (new data always uses the key version active
 * now), must carry a time zone and must not lie in the future.
 * `doorRequestId`: an id the door minted itself or already took through `acceptedRequestId` (an
 * X-Request-Id header); it is used as is when `raw.requestId` is absent, since scanning it again
 * would only repeat the check, at a few microseconds per request.
 */
export function parseJobRequest(raw: RawJobRequest, defaultDataSetType: DataSetType = 'JSON', now: number = Date.now(), doorRequestId?: string): JobSpec {
  const problems: ValueFailure[] = [];
  const fail = (location: string, reason: string): undefined => {
    problems.push({ location, reason });
    return undefined;
  };

  const text = (field: keyof RawJobRequest, max = MAX_TEXT): string | undefined => {
    const v = raw[field];
    if (v === undefined || v === null || v === '') return undefined;
    if (typeof v !== 'string') return fail(field, 'must be a string');
    if (v.length > max) return fail(field, `must be at most ${max} characters`);
    return v;
  };
  const bool = (field: keyof RawJobRequest): boolean | undefined => {
    const v = raw[field];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'boolean') return fail(field, 'must be a boolean');
    return v;
  };
  const int32 = (field: keyof RawJobRequest): number | undefined => {
    let v = raw[field];
    if (v === undefined || v === null || v === '') return undefined;
    if (typeof v === 'string' && /^-?\d{1,10}$/.test(v)) v = Number(v);
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > INT32_MAX) {
      return fail(field, 'must be a non-negative 32-bit integer');
    }
    // 0 is "not given": gRPC cannot send anything else for an unset id, and HTTP must agree with it.
    return v === 0 ? undefined : v;
  };
  const country = (field: 'countryCode' | 'dataOwningCountryCode'): string | undefined => {
    const v = text(field);
    if (v === undefined) return undefined;
    const upper = v.toUpperCase();
    if (!COUNTRY.test(upper)) return fail(field, 'must be an ISO 3166-1 alpha-2 country code');
    return upper;
  };

  const manifestName = text('manifestName');
  if (manifestName === undefined && !problems.some((p) => p.location === 'manifestName')) {
    fail('manifestName', 'is required');
  }
  const jobTypeText = text('jobType');
  const jobType = jobTypeText === undefined ? undefined : parseJobType(jobTypeText);
  if (jobTypeText === undefined) {
    if (!problems.some((p) => p.location === 'jobType')) fail('jobType', 'is required');
  } else if (jobType === undefined) {
    fail('jobType', 'must be one of Anonymise, Pseudonymise, Restrict, Mask, Encrypt, Decrypt, Reconstruct');
  }
  const dataSetTypeText = text('dataSetType');
  const dataSetType = dataSetTypeText === undefined ? defaultDataSetType : parseDataSetType(dataSetTypeText);
  if (dataSetType === undefined) fail('dataSetType', 'must be JSON, XML, SQL or LIST');

  let snapshotDate: Date | undefined;
  const snapshotText = text('snapshotDate', 64);
  if (snapshotText !== undefined) {
    const ms = Date.parse(snapshotText);
    if (!INSTANT.test(snapshotText) || Number.isNaN(ms)) {
      fail('snapshotDate', 'must be an ISO 8601 timestamp with a time zone, e.g. 2025-06-01T00:00:00Z');
    } else if (jobType !== undefined && !Object.hasOwn(REVERSE_OF, jobType)) {
      fail('snapshotDate', 'applies only to Reconstruct and Decrypt: new data always uses the key version active now');
    } else if (ms > now + SNAPSHOT_CLOCK_TOLERANCE_MS) {
      fail('snapshotDate', 'must not be in the future');
    } else snapshotDate = new Date(Math.min(ms, now));
  }

  const claims = parseClaims(raw.matchingRule, fail);

  let requestId = text('requestId', 128);
  if (requestId !== undefined && !REQUEST_ID_PATTERN.test(requestId)) {
    fail('requestId', 'may contain only letters, digits and . _ : - (at most 128)');
    requestId = undefined;
  } else if (requestId !== undefined && requestIdHoldsPersonalData(requestId)) {
    // Not an error (that would send the client's id back in no form either): a fresh id instead.
    requestId = undefined;
  }

  const useRestrictedText = bool('useRestrictedText');
  const restrictedText = typeof raw.restrictedText === 'string' ? raw.restrictedText : text('restrictedText');
  if (typeof raw.restrictedText === 'string' && raw.restrictedText.length > MAX_TEXT) {
    fail('restrictedText', `must be at most ${MAX_TEXT} characters`);
  }

  const context: RequestContext = {
    requestId: requestId ?? doorRequestId ?? randomUUID(),
    countryCode: country('countryCode'),
    dataOwningCountryCode: country('dataOwningCountryCode'),
    dataUsageId: int32('dataUsageId'),
    thirdPartyId: int32('thirdPartyId'),
    isDataConsistentAcrossOrganization: bool('isDataConsistentAcrossOrganization'),
    snapshotDate,
    claims,
    protectNullValues: bool('protectNullValues'),
    preserveStringLength: bool('preserveStringLength'),
    useRestrictedText,
    restrictedText,
    silentMode: bool('silentMode'),
    executionContext: text('executionContext'),
    apiType: text('apiType'),
    sqlDialect: text('sqlDialect', 32)?.toLowerCase(),
  };

  if (problems.length > 0 || manifestName === undefined || jobType === undefined || dataSetType === undefined) {
    throw new DpgError('INVALID_REQUEST', `Invalid job: ${problems.map((p) => `${p.location} ${p.reason}`).join('; ')}`, {
      errors: problems,
    });
  }
  return { manifestName, jobType, dataSetType, context };
}

function parseClaims(raw: unknown, fail: (location: string, reason: string) => undefined): Claim[] | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'object' || Array.isArray(raw)) return fail('matchingRule', 'must be an object with claims');
  const list = (raw as { claims?: unknown }).claims;
  if (list === undefined || list === null) return undefined;
  if (!Array.isArray(list)) return fail('matchingRule.claims', 'must be an array');
  if (list.length > MAX_CLAIMS) return fail('matchingRule.claims', `must have at most ${MAX_CLAIMS} entries`);
  const claims: Claim[] = [];
  for (let i = 0; i < list.length; i++) {
    const c = list[i] as { attributeName?: unknown; attributeValue?: unknown } | null;
    const name = c?.attributeName;
    const value = c?.attributeValue;
    if (typeof name !== 'string' || name === '' || name.length > MAX_TEXT) {
      fail(`matchingRule.claims[${i}].attributeName`, 'must be a non-empty string');
    } else if (typeof value !== 'string' || value.length > MAX_TEXT) {
      fail(`matchingRule.claims[${i}].attributeValue`, 'must be a string');
    } else claims.push({ attributeName: name, attributeValue: value });
  }
  return claims;
}
