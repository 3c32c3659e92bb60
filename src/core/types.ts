// Shared vocabulary of the engine and its doors: job types, data types, request context, values.

export const JOB_TYPES = [
  'Anonymise',
  'Pseudonymise',
  'Restrict',
  'Mask',
  'Encrypt',
  'Decrypt',
  'Reconstruct',
] as const;
export type JobType = (typeof JOB_TYPES)[number];

/** Job types a manifest writes rules for; Reconstruct and Decrypt are the reverses of two of them. */
export const FORWARD_JOB_TYPES = ['Anonymise', 'Pseudonymise', 'Restrict', 'Mask', 'Encrypt'] as const;
export type ForwardJobType = (typeof FORWARD_JOB_TYPES)[number];

/** The forward job type whose rules a reverse job type runs backwards. */
export const REVERSE_OF = { Reconstruct: 'Pseudonymise', Decrypt: 'Encrypt' } as const;

const jobTypeByLowerName = new Map<string, JobType>(JOB_TYPES.map((j) => [j.toLowerCase(), j]));

/** Accepts a job type name in any letter case (`mask`, `MASK`); undefined when unknown. */
export function parseJobType(name: string): JobType | undefined {
  return jobTypeByLowerName.get(name.toLowerCase());
}

export const DATA_SET_TYPES = ['JSON', 'XML', 'SQL', 'LIST'] as const;
export type DataSetType = (typeof DATA_SET_TYPES)[number];

export function parseDataSetType(name: string): DataSetType | undefined {
  const upper = name.toUpperCase();
  return (DATA_SET_TYPES as readonly string[]).includes(upper) ? (upper as DataSetType) : undefined;
}

/** A leaf value as codecs see it. Text formats (XML, LIST) only ever produce strings. */
export type Scalar = string | number | boolean | null;

export interface Claim {
  readonly attributeName: string;
  readonly attributeValue: string;
}

/**
 * Everything about one request that can change what the engine does, gathered from JobConfig
 * (gRPC), the /api/protect body and headers, the CLI flags or a proxy route.
 */
export interface RequestContext {
  readonly requestId: string;
  /** ISO 3166-1 alpha-2, upper case; validated by the door. */
  readonly countryCode?: string;
  readonly dataOwningCountryCode?: string;
  readonly thirdPartyId?: number;
  readonly dataUsageId?: number;
  /** true: one pseudonym per person across the organisation (third party / usage not mixed in). */
  readonly isDataConsistentAcrossOrganization?: boolean;
  /** Reconstruct and Decrypt only: the key versions active at that instant; default: now. */
  readonly snapshotDate?: Date;
  readonly claims?: readonly Claim[];
  readonly protectNullValues?: boolean;
  readonly preserveStringLength?: boolean;
  readonly useRestrictedText?: boolean;
  readonly restrictedText?: string;
  readonly silentMode?: boolean;
  /** Recorded in the audit line only. */
  readonly executionContext?: string;
  readonly apiType?: string;
  /** SQL dialect name for SQL payloads (mysql, postgresql, …). */
  readonly sqlDialect?: string;
  /** LIST payloads: the delimiter, when the caller knows it (the proxy route's `delimiter`). */
  readonly listDelimiter?: string;
  /** LIST payloads without `listDelimiter`: refuse a header whose delimiter is not certain (the proxy). */
  readonly listRequireCertainDelimiter?: boolean;
}

/** How a request identifies the job to run. */
export interface JobSpec {
  readonly manifestName: string;
  readonly jobType: JobType;
  readonly dataSetType: DataSetType;
  readonly context: RequestContext;
}

/** Counts returned with every result and written to the audit log. */
export interface ProtectSummary {
  /** Values changed (or removed) by a technique. */
  protected: number;
  /** Values that failed and were replaced (silent mode only; otherwise the request fails). */
  failed: number;
  /** Where values failed and why (never the value); silent mode only. Capped in length. */
  failures: { location: string; reason: string }[];
}
