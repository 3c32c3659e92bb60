// Turns a catalogue error into a gRPC status: the catalogue's gRPC code, our own detail as the
// message, and the error code and request id as trailing metadata. Never a payload value.

import { Metadata, type StatusObject, type status } from '@grpc/grpc-js';
import type { DpgError } from '../../core/errors.ts';

/** Trailing metadata keys (lower case, as HTTP/2 requires). */
export const ERROR_CODE_KEY = 'dpg-error-code';
export const ERROR_DETAILS_KEY = 'dpg-error-details';
export const REQUEST_ID_KEY = 'x-request-id';
export const VALUES_PROTECTED_KEY = 'dpg-values-protected';
export const VALUES_FAILED_KEY = 'dpg-values-failed';
/** How long a client should wait before retrying a shed call (gRPC's retry pushback, in ms). */
export const RETRY_PUSHBACK_KEY = 'grpc-retry-pushback-ms';

/** Failure locations sent back in ERROR_DETAILS_KEY; more would crowd the header block. */
const MAX_DETAILS = 20;
const MAX_DETAILS_CHARS = 4096;

export function toServiceError(err: DpgError, requestId: string): StatusObject {
  const metadata = new Metadata();
  metadata.set(ERROR_CODE_KEY, err.code);
  metadata.set(REQUEST_ID_KEY, requestId);
  if (err.errors !== undefined && err.errors.length > 0) {
    // Locations and reasons are written by the engine and the request parser from names and
    // positions only, so they are as safe to return as the detail itself.
    const details = err.errors.slice(0, MAX_DETAILS).map((e) => ({ location: e.location, reason: e.reason }));
    let json = JSON.stringify(details);
    while (json.length > MAX_DETAILS_CHARS && details.length > 1) {
      details.pop();
      json = JSON.stringify(details);
    }
    if (json.length <= MAX_DETAILS_CHARS) metadata.set(ERROR_DETAILS_KEY, json);
  }
  // The catalogue holds grpc/status.h numbers, which are the values of grpc-js's `status` enum.
  return { code: err.grpcStatus as status, details: err.message, metadata };
}

export function successTrailers(requestId: string, protectedCount: number, failedCount: number): Metadata {
  const metadata = new Metadata();
  metadata.set(REQUEST_ID_KEY, requestId);
  metadata.set(VALUES_PROTECTED_KEY, String(protectedCount));
  metadata.set(VALUES_FAILED_KEY, String(failedCount));
  return metadata;
}
