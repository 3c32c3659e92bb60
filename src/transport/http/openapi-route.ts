// GET /openapi.json: the API's OpenAPI 3.1 description (openapi/openapi.json), the same bytes the
// tests check every real response against. Loaded on first request (its own chunk in dist/), so a
// gateway that is never asked for it holds none of it.

import type { Exchange, HttpDeps } from './exchange.ts';

let document: Promise<string> | undefined;

function load(): Promise<string> {
  document ??= import('../../../openapi/openapi.json', { with: { type: 'json' } }).then((m) => JSON.stringify(m.default));
  return document;
}

export async function handleOpenApi(_deps: HttpDeps, ex: Exchange): Promise<void> {
  const body = await load();
  ex.res.writeHead(200, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'public, max-age=300',
    'X-Request-Id': ex.requestId,
  });
  ex.res.end(body);
}
