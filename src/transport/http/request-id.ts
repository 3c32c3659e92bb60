// Request ids: the client's own when it is a sane token, else a fresh UUID.

import type { IncomingMessage } from 'node:http';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function isValidRequestId(id: unknown): id is string {
  return typeof id === 'string' && REQUEST_ID.test(id);
}

/** X-Request-Id (or Request-Id) when valid; a bad header is ignored (a fresh id is used), not an error. */
export function clientRequestIdFrom(req: IncomingMessage): string | undefined {
  const header = req.headers['x-request-id'] ?? req.headers['request-id'];
  return isValidRequestId(header) ? header : undefined;
}
