// Review finding 1: request heads a strict parser would not call HTTP, but a lenient server (Python's
// http.server under Flask: any whitespace separates words, versions are digits around a dot, a stray
// CR is stripped, HTTP/1.0 needs no Host) reads as a request to the routed host. On a port a
// wildcard route covers, each one must be protected or refused by the transparent listener — never
// spliced in clear. The upstream is a real Flask app that records what it routed and whether the
// card arrived in clear.

import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { CARD, FLASK_MISSING, route, startFlaskUpstream, type FlaskUpstream } from '../helpers.ts';
import { startTransparentProxy, type TransparentProxy } from './helpers.ts';

const BODY = JSON.stringify({ cardNumber: CARD });

/** A request with `line` as its request line and `eol` ending every line of the head. */
const request = (line: string, { host = 'api.partner.test', eol = '\r\n' } = {}): string =>
  `${line}${eol}${host === '' ? '' : `Host: ${host}${eol}`}Content-Type: application/json${eol}Content-Length: ${BODY.length}${eol}Connection: close${eol}${eol}${BODY}`;

/** Every way a lenient server still reads `POST /v1/customers` (plus the HTTP/0.9 GET). */
const LENIENT: readonly [string, string][] = [
  ['version HTTP/1.10', request('POST /v1/customers HTTP/1.10')],
  ['version HTTP/01.1', request('POST /v1/customers HTTP/01.1')],
  ['lower-case version', request('POST /v1/customers http/1.1')],
  ['a stray CR before CRLF', request('POST /v1/customers HTTP/1.1\r')],
  ['vertical tab separators', request('POST\x0b/v1/customers\x0bHTTP/1.1')],
  ['form feed separators', request('POST\x0c/v1/customers\x0cHTTP/1.1')],
  ['unit separator (0x1f) separators', request('POST\x1f/v1/customers\x1fHTTP/1.1')],
  ['no-break space (0xa0) separators', request('POST\xa0/v1/customers\xa0HTTP/1.1')],
  ['leading whitespace', request('\x0b POST /v1/customers HTTP/1.1')],
  ['HTTP/1.0 without Host', request('POST /v1/customers HTTP/1.0', { host: '' })],
  ['HTTP/1.0 without Host, bare LF', request('POST /v1/customers HTTP/1.0', { host: '', eol: '\n' })],
  ['HTTP/0.9 GET with the card in the query', `GET /v1/customers?cardNumber=${CARD}\r\n`],
];

/** Writes `payload` to the listener and waits until the other side closes (or `ms`). */
function send(port: number, payload: string, ms = 1500): Promise<string> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    s.on('data', (d: Buffer) => chunks.push(d));
    s.on('error', () => undefined);
    const timer = setTimeout(() => s.destroy(), ms);
    s.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('latin1'));
    });
    s.write(Buffer.from(payload, 'latin1'));
  });
}

describe('transparent listener: heads only a lenient server reads as HTTP (Flask upstream)', () => {
  let flask: FlaskUpstream | undefined;
  let tp: TransparentProxy;

  before(async () => {
    flask = await startFlaskUpstream();
    if (!flask) return;
    tp = await startTransparentProxy({
      routes: [
        route('partner', {
          match: { host: '*.partner.test', port: flask.port, path: '/v1/customers/**' },
          request: { manifest: 'customer', jobType: 'Mask', queryParams: ['cardNumber'] },
        }),
      ],
    });
  });
  after(async () => {
    await tp?.close();
    flask?.close();
  });

  const via = async (payload: string): Promise<string> => {
    tp.redirectNext({ address: '127.0.0.1', port: (flask as FlaskUpstream).port, family: 4 });
    return send(tp.port, payload);
  };

  test('every lenient spelling is protected or refused; Flask never routes the card in clear', async (t) => {
    if (!flask) {
      t.skip(`${FLASK_MISSING}: the lenient-head test did not run`);
      return;
    }
    // The recorder works: an unrouted host is spliced and reaches Flask in clear; a routed one masked.
    await via(request('POST /v1/customers HTTP/1.1', { host: 'other.test' }));
    await via(request('POST /v1/customers HTTP/1.1'));
    const [unrouted, routed] = await flask.records();
    assert.deepEqual(unrouted, { path: '/v1/customers', endpoint: 'customers', clear: true });
    assert.deepEqual(routed, { path: '/v1/customers', endpoint: 'customers', clear: false });

    const leaked: string[] = [];
    for (const [name, payload] of LENIENT) {
      const before = (await flask.records()).length;
      const answer = await via(payload);
      const reached = (await flask.records()).slice(before);
      if (reached.some((r) => r.clear)) leaked.push(`${name} (answer ${JSON.stringify(answer.split('\r\n')[0])})`);
    }
    assert.deepEqual(leaked, [], 'the card reached Flask in clear');
  });
});
