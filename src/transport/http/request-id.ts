// Request ids: the client's own when it is a sane token holding no personal data, else a fresh UUID
// (engine/request-id.ts decides for every door).

import type { IncomingMessage } from 'node:http';
import { acceptedRequestId } from '../../engine/request-id.ts';

/** X-Request-Id (or Request-Id) when acceptable; a bad header is ignored (a fresh id is used), not an error. */
export function clientRequestIdFrom(req: IncomingMessage): string | undefined {
  return acceptedRequestId(req.headers['x-request-id'] ?? req.headers['request-id']);
}
