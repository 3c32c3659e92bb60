// Request ids a client chooses (X-Request-Id and Request-Id headers, gRPC `request_id` and its
// x-request-id metadata, a body's `requestId`) are logged, written to audit lines and echoed in
// responses. A client can put anything there, personal data included: an id is taken only when it
// is a plain token in which the content scanner finds nothing (no card, SSN, phone, IBAN, IP
// address…). Otherwise the door uses a fresh id and the client's is written nowhere.

import { ContentScanner } from '../detect/scanner.ts';
import { DETECT_KINDS } from '../detect/kinds.ts';

/** The shape of a request id a client may choose (DESIGN: sane tokens only). */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** Every kind, whatever the manifest: the id is checked before (and apart from) any manifest. */
const scanner = new ContentScanner(DETECT_KINDS);

/** True when a well-formed id holds a value the content scanner detects (`4111111111111111`). */
export function requestIdHoldsPersonalData(id: string): boolean {
  return scanner.scan(id).length > 0;
}

/** The client's id when it is well formed and holds no detected value; undefined: use a fresh id. */
export function acceptedRequestId(id: unknown): string | undefined {
  return typeof id === 'string' && REQUEST_ID_PATTERN.test(id) && !requestIdHoldsPersonalData(id) ? id : undefined;
}
