// Finds and verifies the caller's token: X-Resource-Token, or Authorization: Bearer (DESIGN §3).

import type { IncomingMessage } from 'node:http';
import { DpgError } from '../../core/errors.ts';
import type { Identity, Principal } from '../../identity/types.ts';

/** Sent with every 401 so clients know which scheme is expected (RFC 6750 §3). */
export const BEARER_CHALLENGE = { 'WWW-Authenticate': 'Bearer realm="dpg"' };

/** The raw token, or undefined when the request carries none. */
export function tokenFrom(req: IncomingMessage): string | undefined {
  const resourceToken = req.headers['x-resource-token'];
  if (typeof resourceToken === 'string' && resourceToken.trim() !== '') {
    return resourceToken.trim().replace(/^Bearer\s+/i, '');
  }
  const authorization = req.headers.authorization;
  if (typeof authorization === 'string') {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (match === null) throw new DpgError('UNAUTHENTICATED', 'The Authorization header must use the Bearer scheme');
    return match[1];
  }
  return undefined;
}

/**
 * Not `async` on purpose: returning identity.verify's promise from an async function would wrap
 * it in a second promise (two extra microtask hops on every request). Errors still come back as
 * a rejected promise, never a synchronous throw.
 */
export function authenticate(req: IncomingMessage, identity: Identity): Promise<Principal> {
  let token: string | undefined;
  try {
    token = tokenFrom(req);
  } catch (err) {
    return Promise.reject(err);
  }
  if (token === undefined) {
    return Promise.reject(new DpgError('UNAUTHENTICATED', 'A token is required in the X-Resource-Token or Authorization header'));
  }
  return identity.verify(token);
}
