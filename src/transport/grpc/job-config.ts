// Maps a JobConfig (proto3, snake_case) to the fields parseJobRequest validates for every door.
// proto3 cannot tell "unset" from its default, so '' and 0 mean "not given" for strings and ids.

import { DpgError, isDpgError, type ValueFailure } from '../../core/errors.ts';
import type { JobSpec } from '../../core/types.ts';
import type { CellType } from '../../engine/types.ts';
import { parseJobRequest, type RawJobRequest } from '../../engine/request.ts';
import type { JobConfigMessage } from './wire.ts';

export interface GrpcJob {
  readonly job: JobSpec;
  readonly cellType: CellType;
}

/**
 * Validates a JobConfig through the shared request parser. Problems come back named as a gRPC
 * client wrote them (`job_config.configuration_name`, `request_id`), not with the HTTP names.
 */
export function parseGrpcJob(jc: JobConfigMessage, requestId: string): GrpcJob {
  const cellType = parseCellType(jc.dataset_type);
  try {
    return { job: parseJobRequest(jobConfigToRaw(jc, cellType, requestId)), cellType };
  } catch (err) {
    if (!isDpgError(err) || err.code !== 'INVALID_REQUEST' || err.errors === undefined) throw err;
    const problems: ValueFailure[] = err.errors.map((p) => ({ location: grpcFieldName(p.location), reason: p.reason }));
    throw new DpgError('INVALID_REQUEST', `Invalid job: ${problems.map((p) => `${p.location} ${p.reason}`).join('; ')}`, {
      errors: problems,
      cause: err,
    });
  }
}

/** `matchingRule.claims[0].attributeName` → `job_config.matching_rule.claims[0].attribute_name`. */
export function grpcFieldName(location: string): string {
  if (location === 'requestId') return 'request_id';
  if (location === 'manifestName') return 'job_config.configuration_name';
  return `job_config.${location.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}`;
}

/** JobConfig.dataset_type: FILE (default when empty) or JSON, any letter case. */
export function parseCellType(datasetType: string): CellType {
  if (datasetType === '') return 'FILE';
  const upper = datasetType.toUpperCase();
  if (upper === 'FILE' || upper === 'JSON') return upper;
  throw new DpgError('INVALID_REQUEST', 'Invalid job: dataset_type must be FILE or JSON', {
    errors: [{ location: 'job_config.dataset_type', reason: 'must be FILE or JSON' }],
  });
}

/**
 * The raw job fields for parseJobRequest. FILE cells are plain values, so the job's data set type
 * is LIST (the tabular type); JSON cells are JSON documents. Booleans pass as sent: false is also
 * every flag's default.
 */
export function jobConfigToRaw(jc: JobConfigMessage, cellType: CellType, requestId: string): RawJobRequest {
  return {
    manifestName: jc.configuration_name,
    jobType: jc.job_type,
    dataSetType: cellType === 'JSON' ? 'JSON' : 'LIST',
    countryCode: jc.country_code,
    dataOwningCountryCode: jc.data_owning_country_code,
    dataUsageId: jc.data_usage_id === 0 ? undefined : jc.data_usage_id,
    thirdPartyId: jc.third_party_id === 0 ? undefined : jc.third_party_id,
    isDataConsistentAcrossOrganization: jc.is_data_consistent_across_organization,
    snapshotDate: jc.snapshot_date,
    matchingRule:
      jc.matching_rule === undefined
        ? undefined
        : {
            claims: jc.matching_rule.claims.map((c) => ({
              attributeName: c.attribute_name,
              attributeValue: c.attribute_value,
            })),
          },
    protectNullValues: jc.protect_null_values,
    preserveStringLength: jc.preserve_string_length,
    useRestrictedText: jc.use_restricted_text,
    restrictedText: jc.restricted_text,
    silentMode: jc.silent_mode,
    executionContext: jc.execution_context,
    apiType: jc.api_type,
    requestId,
  };
}
