// Errors the proxy itself answers with: RFC 9457 problem bodies carrying the catalogue code,
// including the catalogue's two upstream codes (UPSTREAM_UNREACHABLE, UPSTREAM_TIMEOUT).

import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { DpgError, problemType, toDpgError, type ErrorCode } from '../core/errors.ts';

export interface Problem {
  readonly status: number;
  readonly code: ErrorCode;
  readonly title: string;
  readonly detail: string;
  readonly errors?: readonly { location: string; reason: string }[];
}

/** Any thrown value as a problem; foreign errors become INTERNAL without their message. */
export function problemOf(err: unknown): Problem {
  const e = toDpgError(err);
  return { status: e.status, code: e.code, title: e.title, detail: e.message, errors: e.errors };
}

export const upstreamUnreachable = (detail: string): Problem => problemOf(new DpgError('UPSTREAM_UNREACHABLE', detail));

export const upstreamTimeout = (detail: string): Problem => problemOf(new DpgError('UPSTREAM_TIMEOUT', detail));

/** The RFC 9457 body of a problem. */
function problemBody(problem: Problem, requestId: string | undefined): string {
  return JSON.stringify({
    type: problemType(problem.code),
    title: problem.title,
    status: problem.status,
    detail: problem.detail,
    code: problem.code,
    ...(requestId === undefined ? {} : { requestId }),
    ...(problem.errors && problem.errors.length > 0 ? { errors: problem.errors } : {}),
  });
}

/**
 * Writes the problem unless headers already went out (then the connection is cut: a truncated
 * response must not look complete). `close` ends the keep-alive connection (unread body left).
 */
export function sendProblem(res: ServerResponse, problem: Problem, requestId: string | undefined, close = false, extra?: Record<string, string>): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = problemBody(problem, requestId);
  const headers: Record<string, string | number> = {
    'content-type': 'application/problem+json',
    'content-length': Buffer.byteLength(body),
  };
  if (requestId !== undefined) headers['x-request-id'] = requestId;
  // HTTP/2 has no Connection field (a stream's unread body is the stream's own): only HTTP/1.1 gets it.
  if (close && (res as { stream?: unknown }).stream === undefined) headers.connection = 'close';
  if (extra) Object.assign(headers, extra);
  res.writeHead(problem.status, headers);
  res.end(body);
}

/** The same problem on a raw socket (upgrade requests have no ServerResponse), then the connection ends. */
export function sendProblemOnSocket(socket: Duplex, problem: Problem, extra?: Record<string, string>): void {
  const body = problemBody(problem, undefined);
  const more = extra === undefined ? '' : Object.entries(extra).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  socket.end(
    `HTTP/1.1 ${problem.status} ${problem.title}\r\nContent-Type: application/problem+json\r\n${more}` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
