// response-framing.ts on its own: where responses end on a relayed keep-alive connection, fed whole
// and byte by byte (any split is the same reading), and what makes the end unknowable.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ResponseFraming } from '../../../src/proxy/transparent/response-framing.ts';

/** Feeds `text` after `methods` were sent; returns idle/untilClose after it, whole and byte by byte. */
function frame(methods: string[], text: string): { idle: boolean; untilClose: boolean; lost: boolean } {
  const readings = [1, text.length || 1].map((size) => {
    const f = new ResponseFraming();
    for (const m of methods) f.expect(m);
    const bytes = Buffer.from(text, 'latin1');
    for (let i = 0; i < bytes.length; i += size) f.feed(bytes.subarray(i, i + size));
    return { idle: f.idle, untilClose: f.untilClose, lost: f.lost };
  });
  assert.deepEqual(readings[0], readings[1], 'byte by byte reads the same');
  return readings[0];
}

test('Content-Length, chunked (extensions, trailers), several responses: idle exactly at the end', () => {
  const cl = 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello';
  assert.equal(frame(['GET'], cl).idle, true);
  assert.equal(frame(['GET'], cl.slice(0, -1)).idle, false);
  const chunked = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n';
  assert.equal(frame(['POST'], chunked).idle, true);
  assert.equal(frame(['POST'], chunked.slice(0, -2)).idle, false);
  assert.equal(frame(['GET', 'POST'], cl + chunked).idle, true);
  assert.equal(frame(['GET', 'POST'], cl).idle, false, 'one response still owed');
});

test('no body after HEAD, 204, 304; 1xx are interim; empty lines before a status line tolerated', () => {
  assert.equal(frame(['HEAD'], 'HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n').idle, true);
  assert.equal(frame(['GET'], 'HTTP/1.1 204 No Content\r\n\r\n').idle, true);
  assert.equal(frame(['GET'], 'HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n').idle, true);
  assert.equal(frame(['POST'], 'HTTP/1.1 100 Continue\r\n\r\n').idle, false);
  assert.equal(frame(['POST'], 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n').idle, true);
  assert.equal(frame(['GET'], '\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n').idle, true);
});

test('unknowable ends: no length (until close), 101, an unreadable status line, an unasked response, conflicting lengths', () => {
  assert.deepEqual(frame(['GET'], 'HTTP/1.1 200 OK\r\n\r\nbody runs to the close'), { idle: false, untilClose: true, lost: false });
  assert.deepEqual(frame(['GET'], 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n'), { idle: false, untilClose: true, lost: false });
  for (const lost of [
    'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n',
    'XTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n',
    'HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
  ]) assert.deepEqual(frame(['GET'], lost), { idle: false, untilClose: false, lost: true }, JSON.stringify(lost));
  assert.deepEqual(frame([], 'HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'), { idle: false, untilClose: false, lost: true });
});
