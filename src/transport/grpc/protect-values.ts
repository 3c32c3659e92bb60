// ProtectService.ProtectValues: authenticate, validate the job and the table's shape, run the engine
// over the rows, answer with the protected rows. One audit line and one metrics observation per call.

import { randomUUID } from 'node:crypto';
import type { handleUnaryCall, Metadata } from '@grpc/grpc-js';
import { audit } from '../../core/audit.ts';
import { DpgError, toDpgError } from '../../core/errors.ts';
import { overloadedError, type DoorGate } from '../../core/overload.ts';
import { safeName } from '../../core/safe-name.ts';
import type { Logger } from '../../core/logger.ts';
import type { Metrics } from '../../core/metrics.ts';
import type { JobSpec } from '../../core/types.ts';
import type { LimitsConfig } from '../../config/types.ts';
import type { CellType, Engine } from '../../engine/types.ts';
import { acceptedRequestId, REQUEST_ID_PATTERN } from '../../engine/request-id.ts';
import type { Identity } from '../../identity/types.ts';
import { bearerToken } from './bearer.ts';
import { parseGrpcJob } from './job-config.ts';
import type { ProtectValuesReply } from './proto.ts';
import { REQUEST_ID_KEY, RETRY_PUSHBACK_KEY, successTrailers, toServiceError } from './status.ts';
import { emptyJobConfig, type DecodedProtectValuesRequest } from './wire.ts';

export interface ProtectValuesDeps {
  readonly engine: Engine;
  readonly identity: Identity;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly limits: LimitsConfig;
  /** The gRPC door's overload gate (docs/operations.md#overload); absent: no shedding. */
  readonly gate?: DoorGate;
  /** Sent as the grpc-retry-pushback-ms trailer of a shed call. Default 1. */
  readonly retryAfterSeconds?: number;
}

/**
 * The call's request id: `request_id` when acceptable, else an `x-request-id` metadata entry when
 * acceptable, else a fresh UUID. Acceptable: well formed and holding no personal data the content
 * scanner finds (engine/request-id.ts). (A malformed non-empty `request_id` is still rejected by
 * the job parser.)
 */
export function pickRequestId(fromMessage: string, metadata: Metadata): string {
  return acceptedRequestId(fromMessage) ?? acceptedRequestId(metadata.get(REQUEST_ID_KEY)[0]) ?? randomUUID();
}

/**
 * The table must be rectangular over `labels`, with values within the length limit. Errors name
 * the row and column, never a value.
 */
export function checkTable(labels: readonly string[], rows: readonly (readonly string[])[], maxValueLength: number): void {
  if (labels.length === 0) {
    throw new DpgError('INVALID_REQUEST', 'labels must name at least one column', {
      errors: [{ location: 'labels', reason: 'must not be empty' }],
    });
  }
  const width = labels.length;
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    if (row.length !== width) {
      throw new DpgError('INVALID_REQUEST', `rows[${i}] has ${row.length} columns, labels name ${width}`, {
        errors: [{ location: `rows[${i}]`, reason: `has ${row.length} columns, expected ${width}` }],
      });
    }
    for (let j = 0; j < width; j++) {
      if (row[j].length > maxValueLength) {
        throw new DpgError(
          'PAYLOAD_TOO_LARGE',
          `rows[${i}].columns[${j}] (${safeName(labels[j])}) is longer than ${maxValueLength} characters (limits.maxValueLength)`,
        );
      }
    }
  }
}

/** The unary handler. grpc-js ignores a handler's return value, so the async work runs inside serve(), which never rejects. */
export function createProtectValuesHandler(
  deps: ProtectValuesDeps,
): handleUnaryCall<DecodedProtectValuesRequest, ProtectValuesReply> {
  return (call, callback) => {
    const admission = deps.gate?.admit(call.request.wireBytes ?? 0);
    if (typeof admission === 'string') {
      // Refused before any work (token checks included): UNAVAILABLE, which clients retry with
      // backoff, and the pushback gRPC's retry policy honours (docs/grpc-api.md, Overload).
      const status = toServiceError(overloadedError('grpc', admission), pickRequestId(call.request.request_id, call.metadata));
      status.metadata?.set(RETRY_PUSHBACK_KEY, String((deps.retryAfterSeconds ?? 1) * 1000));
      callback(status);
      return;
    }
    void serve(deps, call.request, call.metadata, () => call.cancelled, callback).finally(() => admission?.release());
  };
}

type Callback = Parameters<handleUnaryCall<DecodedProtectValuesRequest, ProtectValuesReply>>[1];

async function serve(
  deps: ProtectValuesDeps,
  msg: DecodedProtectValuesRequest,
  metadata: Metadata,
  cancelled: () => boolean,
  callback: Callback,
): Promise<void> {
  const started = performance.now();
  const requestId = pickRequestId(msg.request_id, metadata);
  let clientId: string | undefined;
  let job: JobSpec | undefined;
  let cellType: CellType | undefined;

  const record = (outcome: string, valuesProtected: number, valuesFailed: number): void => {
    const ms = performance.now() - started;
    deps.metrics.observeRequest({ door: 'grpc', jobType: job?.jobType ?? 'none', outcome, seconds: ms / 1000, valuesProtected });
    audit(deps.logger, {
      door: 'grpc',
      requestId,
      clientId,
      manifest: job === undefined ? undefined : deps.engine.hasManifest(job.manifestName) ? job.manifestName : safeName(job.manifestName),
      jobType: job?.jobType,
      dataSetType: cellType,
      outcome,
      valuesProtected,
      valuesFailed,
      durationMs: Math.round(ms * 1000) / 1000,
      executionContext: job?.context.executionContext,
      apiType: job?.context.apiType,
    });
  };

  try {
    const principal = await deps.identity.verify(bearerToken(metadata));
    clientId = principal.clientId;
    if (msg.malformed !== undefined) {
      throw new DpgError('INVALID_REQUEST', `Malformed ProtectValuesRequest: ${msg.malformed}`);
    }
    if (msg.tooManyRows === true) {
      throw new DpgError('PAYLOAD_TOO_LARGE', `More than ${deps.limits.maxRows} rows in one request (limits.maxRows)`);
    }
    // The job carries the id the call uses; a malformed one still goes to the parser to be refused.
    const idForJob = msg.request_id !== '' && !REQUEST_ID_PATTERN.test(msg.request_id) ? msg.request_id : requestId;
    const parsed = parseGrpcJob(msg.job_config ?? emptyJobConfig(), idForJob);
    job = parsed.job;
    cellType = parsed.cellType;
    deps.identity.authorize(principal, job);
    checkTable(msg.labels, msg.rows, deps.limits.maxValueLength);
    if (cancelled()) {
      // The client gave up (deadline or cancel) while we verified its token: spare the engine.
      record('CANCELLED', 0, 0);
      return;
    }
    const result = await deps.engine.protectRowsAsync(job, msg.labels, msg.rows, cellType);
    record('ok', result.summary.protected, result.summary.failed);
    callback(null, { rows: result.rows }, successTrailers(requestId, result.summary.protected, result.summary.failed));
  } catch (err) {
    const error = toDpgError(err);
    if (error.code === 'INTERNAL') {
      // The cause's message may quote payload data: log its type only.
      const cause = error === err ? error.cause : err;
      deps.logger.error({ door: 'grpc', requestId, errorType: errorType(cause) }, 'internal error in ProtectValues');
    }
    record(error.code, 0, 0);
    callback(toServiceError(error, requestId));
  }
}

function errorType(err: unknown): string {
  if (err instanceof Error) return err.name;
  return typeof err;
}
