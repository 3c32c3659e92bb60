// Admission of one HTTP/1.1 request at an overload gate (core/overload.ts): its declared length is
// counted at once, a chunked body as its bytes arrive, and the admission ends when the response does.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { declaredLength, type Admission, type DoorGate, type ShedReason } from './overload.ts';

/**
 * Admits `req` at `gate`, releasing it when `res` closes; or returns why it was refused (the
 * caller answers 503). A body without Content-Length is counted as node:http's parser hands it
 * over (IncomingMessage.push): adding a 'data' listener instead would start the stream flowing
 * before its reader is attached.
 */
export function admitRequest(gate: DoorGate, req: IncomingMessage, res: ServerResponse, holdsBody = true): Admission | ShedReason {
  // A body streamed on untouched (the proxy's unrouted requests) is never in memory: it counts as a
  // request, not as bytes, so one large pass-through upload does not fill the door's byte bound.
  const admission = gate.admit(holdsBody ? declaredLength(req.headers['content-length']) : 0);
  if (typeof admission === 'string') return admission;
  res.once('close', admission.release);
  if (holdsBody && req.headers['content-length'] === undefined && !req.complete) {
    const push = req.push.bind(req);
    req.push = (chunk: unknown, encoding?: BufferEncoding): boolean => {
      if (chunk !== null && chunk !== undefined) admission.received((chunk as { length: number }).length);
      return push(chunk, encoding);
    };
  }
  return admission;
}
