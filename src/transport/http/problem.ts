// RFC 9457 problem responses built from the error catalogue. Only our own, value-free texts go out.

import type { ServerResponse } from 'node:http';
import type { DpgError } from '../../core/errors.ts';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** `type` URI of a catalogue code; documented in docs/http-api.md#errors. */
export function problemType(code: string): string {
  return `urn:dpg:error:${code}`;
}

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

/** Problems of the HTTP layer itself (no route, wrong method), outside the protection catalogue. */
export function routeProblem(status: 404 | 405, requestId: string): ProblemBody {
  return status === 404
    ? { type: problemType('ROUTE_NOT_FOUND'), title: 'Not found', status, detail: 'No such endpoint', code: 'ROUTE_NOT_FOUND', requestId }
    : {
        type: problemType('METHOD_NOT_ALLOWED'),
        title: 'Method not allowed',
        status,
        detail: 'This endpoint does not accept this method',
        code: 'METHOD_NOT_ALLOWED',
        requestId,
      };
}
