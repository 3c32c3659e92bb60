// RFC 9457 problem responses built from the error catalogue. Only our own, value-free texts go out.

import type { ServerResponse } from 'node:http';
import { DpgError, problemType } from '../../core/errors.ts';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export { problemType };

export interface ProblemBody {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly code: string;
  readonly requestId: string;
  readonly errors?: readonly { location: string; reason: string }[];
}

export function problemFromError(err: DpgError, requestId: string): ProblemBody {
  const body: ProblemBody = {
    type: problemType(err.code),
    title: err.title,
    status: err.status,
    detail: err.message,
    code: err.code,
    requestId,
  };
  return err.errors !== undefined && err.errors.length > 0 ? { ...body, errors: err.errors } : body;
}

/**
 * Writes a problem response. `closeConnection` is for answers sent before the request body was
 * read (auth failures, size limits): the rest of the upload is not worth receiving.
 */
export function sendProblem(
  res: ServerResponse,
  problem: ProblemBody,
  options: { closeConnection?: boolean; headers?: Record<string, string> } = {},
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const payload = JSON.stringify(problem);
  const headers: Record<string, string | number> = {
    'Content-Type': PROBLEM_CONTENT_TYPE,
    'Content-Length': Buffer.byteLength(payload),
    'Cache-Control': 'no-store',
    'X-Request-Id': problem.requestId,
    ...options.headers,
  };
  if (options.closeConnection) headers.Connection = 'close';
  res.writeHead(problem.status, headers);
  res.end(payload);
}

/** Problems of the HTTP layer itself (no route, wrong method): transport codes of the catalogue. */
export function routeProblem(status: 404 | 405, requestId: string): ProblemBody {
  return status === 404
    ? problemFromError(new DpgError('ROUTE_NOT_FOUND', 'No such endpoint'), requestId)
    : problemFromError(new DpgError('METHOD_NOT_ALLOWED', 'This endpoint does not accept this method'), requestId);
}
