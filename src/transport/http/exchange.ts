// One request/response pair as the routes see it, with what the audit line will say about it.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { DpgError } from '../../core/errors.ts';
import { safeName } from '../../core/safe-name.ts';
import type { DataSetType, JobSpec } from '../../core/types.ts';
import { parseJobRequest, type RawJobRequest } from '../../engine/request.ts';
import type { Engine } from '../../engine/types.ts';
import type { GatewayConfig } from '../../config/types.ts';
import type { Identity } from '../../identity/types.ts';
import type { Logger } from '../../core/logger.ts';
import type { Metrics } from '../../core/metrics.ts';
import type { Overload } from '../../core/overload.ts';

export interface HttpDeps {
  readonly config: GatewayConfig;
  readonly engine: Engine;
  readonly identity: Identity;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** False until config, manifests and keys are loaded (readyz answers 503 meanwhile). */
  readonly isReady: () => boolean;
  /** The egress proxy's CA certificate, for GET /proxy/ca.pem; undefined when there is none. */
  readonly proxyCaPem?: () => string | undefined;
  /** Overload shedding (docs/operations.md#overload); absent (servers built in tests): none. */
  readonly overload?: Overload;
}

/** Names, ids and counts only: what the audit line of this request will carry. */
export interface AuditDraft {
  clientId?: string;
  manifest?: string;
  jobType?: string;
  dataSetType?: string;
  executionContext?: string;
  apiType?: string;
}

export interface Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** The id answered and logged; replaced by the body's requestId once a job is parsed. */
  requestId: string;
  /** The valid X-Request-Id the client sent, if any (it wins over a body field). */
  readonly clientRequestId: string | undefined;
  readonly startedAt: number;
  readonly audit: AuditDraft;
}

/** Records the job for the audit line; a manifest name the engine does not know is logged only if it is a plain name. */
export function noteJob(ex: Exchange, job: JobSpec, engine: Pick<Engine, 'hasManifest'>): void {
  ex.requestId = job.context.requestId;
  ex.audit.manifest = engine.hasManifest(job.manifestName) ? job.manifestName : safeName(job.manifestName);
  ex.audit.jobType = job.jobType;
  ex.audit.dataSetType = job.dataSetType;
  ex.audit.executionContext = job.context.executionContext;
  ex.audit.apiType = job.context.apiType;
}

const JOB_FIELDS = [
  'manifestName',
  'jobType',
  'countryCode',
  'dataOwningCountryCode',
  'dataUsageId',
  'thirdPartyId',
  'isDataConsistentAcrossOrganization',
  'snapshotDate',
  'matchingRule',
  'protectNullValues',
  'preserveStringLength',
  'useRestrictedText',
  'restrictedText',
  'silentMode',
  'executionContext',
  'apiType',
  'sqlDialect',
  'requestId',
] as const satisfies readonly (keyof RawJobRequest)[];

/**
 * The job of a parsed JSON body (own properties only: a `__proto__` key is data and is never
 * looked through to a prototype). The header-borne fields are passed by the caller; the request id
 * is the client's valid X-Request-Id, else the body's, else the door's own (`fallbackRequestId`).
 */
export function jobOfBody(
  body: Record<string, unknown>,
  fromHeaders: { dataSetType: string; sqlDialect: string | undefined; requestId: string | undefined; fallbackRequestId: string },
  defaultDataSetType?: DataSetType,
): JobSpec {
  const raw: Record<string, unknown> = {};
  for (const name of JOB_FIELDS) if (Object.hasOwn(body, name)) raw[name] = body[name];
  raw.dataSetType = fromHeaders.dataSetType;
  if (raw.sqlDialect === undefined && fromHeaders.sqlDialect !== undefined) raw.sqlDialect = fromHeaders.sqlDialect;
  // The header's id and the door's own were vetted or minted by the door: only a body's id is checked here.
  if (fromHeaders.requestId !== undefined) delete raw.requestId;
  const doorId = fromHeaders.requestId ?? fromHeaders.fallbackRequestId;
  return parseJobRequest(raw as RawJobRequest, defaultDataSetType, undefined, doorId);
}

/** Parses a JSON object body; the parser's message is never used, since it can quote the input. */
export function parseJsonObject(text: string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new DpgError('INVALID_REQUEST', `${what} is not valid JSON`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new DpgError('INVALID_REQUEST', `${what} must be a JSON object`);
  return value as Record<string, unknown>;
}
