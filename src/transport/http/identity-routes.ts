// The identity endpoint on the HTTP listener: POST …/token (RFC 6749 client credentials) and GET …/jwks.

import { decodeJwt } from 'jose';
import type { ServerResponse } from 'node:http';
import { isDpgError } from '../../core/errors.ts';
import type { TokenResponse } from '../../identity/types.ts';
import type { Exchange, HttpDeps } from './exchange.ts';
import { mediaType } from './protect-headers.ts';
import { readBody } from './read-body.ts';

export const TOKEN_PATH = '/gateway/identity/v1/token';
export const JWKS_PATH = '/gateway/identity/v1/jwks';
const MAX_TOKEN_REQUEST_BYTES = 16 * 1024;

/** Returns the audit outcome: 'ok' or the OAuth error code. */
export async function handleToken(deps: HttpDeps, ex: Exchange): Promise<string> {
  const { req, res } = ex;
  if (mediaType(req) !== 'application/x-www-form-urlencoded') {
    return sendOAuth(res, ex, { status: 400, body: { error: 'invalid_request', error_description: 'Content-Type must be application/x-www-form-urlencoded' } });
  }
  let bytes: Buffer;
  try {
    bytes = await readBody(req, MAX_TOKEN_REQUEST_BYTES);
  } catch (err) {
    const status = isDpgError(err) && err.status === 413 ? 413 : 400;
    return sendOAuth(res, ex, { status: 400, body: { error: 'invalid_request', error_description: 'The request body is too large or could not be read' } }, status);
  }
  const apiKey = req.headers['x-api-key'];
  const response = await deps.identity.issueToken({
    apiKey: typeof apiKey === 'string' ? apiKey : undefined,
    authorization: req.headers.authorization,
    form: new URLSearchParams(bytes.toString('utf8')),
  });
  if (response.status === 200) {
    const sub = decodeJwt(response.body.access_token).sub;
    if (typeof sub === 'string') ex.audit.clientId = sub;
  }
  return sendOAuth(res, ex, response);
}

function sendOAuth(res: ServerResponse, ex: Exchange, response: TokenResponse, statusOverride?: number): string {
  const payload = JSON.stringify(response.body);
  const headers: Record<string, string | number> = {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(payload),
    // RFC 6749 §5.1: token responses must not be cached.
    'Cache-Control': 'no-store',
    Pragma: 'no-cache',
    'X-Request-Id': ex.requestId,
  };
  // Refused before any secret was checked (too many under way): tell the client when to come back.
  if (response.status === 503) headers['Retry-After'] = response.retryAfterSeconds;
  // RFC 6749 §5.2: a failed Basic authentication is answered with the scheme's challenge.
  if (response.status === 401 && /^Basic /i.test(ex.req.headers.authorization ?? '')) {
    headers['WWW-Authenticate'] = 'Basic realm="dpg", charset="UTF-8"';
  }
  res.writeHead(statusOverride ?? response.status, headers);
  res.end(payload);
  return response.status === 200 ? 'ok' : response.body.error;
}

export function handleJwks(deps: HttpDeps, ex: Exchange): void {
  const payload = JSON.stringify(deps.identity.jwks());
  ex.res.writeHead(200, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(payload),
    // Short, so a verifier sees a rotated key soon (jose also refetches on an unknown kid).
    'Cache-Control': 'public, max-age=60',
    'X-Request-Id': ex.requestId,
  });
  ex.res.end(payload);
}
