// Review finding 12c. (1) Method override: frameworks read a request's method from
// X-HTTP-Method-Override / X-HTTP-Method / X-Method-Override, from a `_method` query parameter
// (Symfony, Laravel, Rails) and from a `_method` field of a POST body (Rails and Symfony: forms;
// Laravel: JSON too). A route limited to PUT must not be stepped around with a POST that the
// upstream runs as a PUT: the request is matched under the override as well (protected if either
// matches). (2) PHP reads a query name `card[number` (a `[` never closed) as `card_number`.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { overrideMethods } from '../../src/proxy/reading/method-override.ts';
import { ANY_METHOD } from '../../src/proxy/reading/routes.ts';
import { CARD, proxyConfig, route, sendRaw, startTestProxy, startUpstream, type TestProxy, type Upstream } from './helpers.ts';

const MASKED = '************1111';
const JSON_BODY = JSON.stringify({ cardNumber: CARD });

/**
 * PHP's reading of a query string ($_GET), names mangled as PHP documents: in a name, `.` and space
 * become `_`, and so does a `[` that is never closed (the first `[`); a closed `[…]` is an array key.
 */
function phpQuery(query: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const pair of query.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const decode = (s: string): string => decodeURIComponent(s.replace(/\+/g, ' '));
    let name = decode(eq === -1 ? pair : pair.slice(0, eq));
    const value = eq === -1 ? '' : decode(pair.slice(eq + 1));
    const bracket = name.indexOf('[');
    const head = (bracket === -1 ? name : name.slice(0, bracket)).replace(/[. ]/g, '_');
    if (bracket === -1) name = head;
    else if (!name.includes(']', bracket)) name = `${head}_${name.slice(bracket + 1)}`;
    else name = head + name.slice(bracket);
    out.set(name, value);
  }
  return out;
}

test('overrideMethods: headers, _method, POST bodies that may carry _method; nothing otherwise', () => {
  assert.deepEqual(overrideMethods('GET', {}, undefined, ''), []);
  assert.deepEqual(overrideMethods('GET', {}, 'q=x&page=2', ''), []);
  assert.deepEqual(overrideMethods('POST', { 'x-http-method-override': 'put, Delete' }, undefined, 'text/plain'), ['PUT', 'DELETE']);
  assert.deepEqual(overrideMethods('POST', { 'x-method-override': 'POST' }, undefined, ''), [], 'its own method adds nothing');
  assert.deepEqual(overrideMethods('GET', {}, 'a=1;_method=patch&%2Emethod=delete', ''), ['PATCH', 'DELETE']);
  assert.deepEqual(overrideMethods('POST', {}, undefined, 'application/x-www-form-urlencoded'), [ANY_METHOD]);
  assert.deepEqual(overrideMethods('POST', {}, undefined, 'application/vnd.api+json'), [ANY_METHOD]);
  assert.deepEqual(overrideMethods('PUT', {}, undefined, 'application/json'), [], 'only a POST body overrides');
});

describe('method override and PHP query names', () => {
  let up: Upstream;
  let p: TestProxy;

  before(async () => {
    up = await startUpstream();
    p = await startTestProxy(
      proxyConfig({
        routes: [
          route('put-only', {
            match: { host: '127.0.0.1', port: up.port, methods: ['PUT'], path: '/v1/customers/**' },
            request: { manifest: 'customer', jobType: 'Mask', queryParams: ['cardNumber'] },
          }),
          route('search', { match: { host: '127.0.0.1', port: up.port, methods: ['GET'], path: '/search' }, request: { manifest: 'customer', jobType: 'Mask', queryParams: ['cardNumber'] } }),
        ],
      }),
    );
  });
  after(async () => {
    await p.close();
    await up.close();
  });

  const send = (target: string, headers: Record<string, string>, body: string, method = 'POST') =>
    sendRaw(
      p.proxy.address.port,
      `${method} http://127.0.0.1:${up.port}${target} HTTP/1.1\r\nHost: 127.0.0.1:${up.port}\r\n${Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('')}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );

  test('the recorder works: a POST without override (a body no framework reads _method from) is not the PUT route: clear', async () => {
    const res = await send('/v1/customers/1', { 'content-type': 'text/plain' }, JSON_BODY);
    assert.equal(res.status, 200);
    assert.equal(JSON.parse(up.received.at(-1)!.body.toString()).cardNumber, CARD);
  });

  for (const header of ['X-HTTP-Method-Override', 'X-HTTP-Method', 'X-Method-Override']) {
    test(`POST with ${header}: PUT is matched as PUT: masked`, async () => {
      const res = await send('/v1/customers/1', { 'content-type': 'application/json', [header]: 'put' }, JSON_BODY);
      assert.equal(res.status, 200, res.body.toString());
      assert.equal(JSON.parse(up.received.at(-1)!.body.toString()).cardNumber, MASKED);
    });
  }

  test('a _method query parameter (any spelling PHP folds onto it) is matched as that method', async () => {
    for (const query of ['_method=PUT', 'x=1&_method=put', '.method=PUT', '_%6Dethod=PUT']) {
      const res = await send(`/v1/customers/1?${query}`, { 'content-type': 'application/json' }, JSON_BODY);
      assert.equal(res.status, 200, `${query}: ${res.body}`);
      assert.equal(JSON.parse(up.received.at(-1)!.body.toString()).cardNumber, MASKED, query);
    }
  });

  test('a POST form or JSON body may carry _method: matched under every method of the path', async () => {
    const form = await send('/v1/customers/1', { 'content-type': 'application/x-www-form-urlencoded' }, `_method=PUT&cardNumber=${CARD}`);
    assert.equal(form.status, 200, form.body.toString());
    assert.equal(new URLSearchParams(up.received.at(-1)!.body.toString()).get('cardNumber'), MASKED);
    const json = await send('/v1/customers/1', { 'content-type': 'application/json' }, JSON.stringify({ _method: 'PUT', cardNumber: CARD }));
    assert.equal(json.status, 200, json.body.toString());
    assert.equal(JSON.parse(up.received.at(-1)!.body.toString()).cardNumber, MASKED);
    // A multipart body cannot be read: refused on the routed path, nothing sent.
    const before = up.received.length;
    const multipart = await send('/v1/customers/1', { 'content-type': 'multipart/form-data; boundary=b' }, `--b\r\nContent-Disposition: form-data; name="_method"\r\n\r\nPUT\r\n--b\r\nContent-Disposition: form-data; name="cardNumber"\r\n\r\n${CARD}\r\n--b--\r\n`);
    assert.equal(multipart.status, 415);
    assert.equal(up.received.length, before);
  });

  test('a query name PHP reads as card_number (`card[number`, `card.number`) is protected', async () => {
    for (const name of ['card[number', 'card.number', 'card+number', 'card_number']) {
      const res = await send(`/search?${name}=${CARD}&q=x`, {}, '', 'GET');
      assert.equal(res.status, 200, `${name}: ${res.body}`);
      const php = phpQuery(up.received.at(-1)!.url.split('?')[1] ?? '');
      assert.equal(php.get('card_number'), MASKED, `${name} as PHP reads it`);
      assert.equal(php.get('q'), 'x');
    }
  });
});
