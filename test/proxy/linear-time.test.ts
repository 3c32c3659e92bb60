// Review finding 10: a regular expression that backtracks on a long hostile input stalls the event
// loop for every connection (`X: a` + 16k spaces + `a` took 236 ms in the transparent listener's
// header peek). Each reader of request bytes in src/proxy and src/proxy/transparent is given the
// worst input of its shape at the size a request can carry (Node's 16 KiB head), and one such input
// must cost about as much CPU as sixteen of a sixteenth of its size (test/helpers/growth.ts): a
// quadratic reader costs sixteen times as much. A wall-clock bound (100 ms) failed on a loaded machine.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { canonicalHostOf } from '../../src/proxy/reading/canonical-host.ts';
import { readPath } from '../../src/proxy/reading/canonical-path.ts';
import { readAbsoluteForm } from '../../src/proxy/reading/request-target.ts';
import { canonicalHost, compilePathGlob, normalizePath } from '../../src/proxy/reading/routes.ts';
import { peekHttpHead } from '../../src/proxy/transparent/http-head.ts';
import { growthRatio } from '../helpers/growth.ts';

const SIZE = 16 * 1024;
/** Linear code costs about as much for one 16 KiB input as for 16 of 1 KiB; quadratic code 16 times as much. */
const MAX_RATIO = 4;

/** `input(n)` builds the hostile input of about n bytes; `read` is the reader under test. */
function linear<T>(name: string, input: (n: number) => T, read: (input: T) => unknown): void {
  const ratio = growthRatio((n) => {
    const value = input(n);
    return () => read(value);
  }, SIZE);
  assert.ok(ratio < MAX_RATIO, `${name}: one ${SIZE}-byte hostile input costs ${ratio.toFixed(1)}× sixteen of ${SIZE / 16} bytes — not linear`);
}

describe('readers of request bytes run in linear time on hostile input', () => {
  test('transparent header peek: a header value of spaces between two letters', () => {
    const head = (n: number) => Buffer.from(`GET / HTTP/1.1\r\nHost: a.test\r\nX: a${' '.repeat(n)}a\r\n\r\n`, 'latin1');
    linear('peekHttpHead (spaces in a value)', head, (b) => peekHttpHead(b, 64 * 1024));
    const tabs = (n: number) => Buffer.from(`GET / HTTP/1.1\r\nHost: a.test\r\nX:${' \t'.repeat(n / 2)}\r\n\r\n`, 'latin1');
    linear('peekHttpHead (blank value)', tabs, (b) => peekHttpHead(b, 64 * 1024));
  });

  test('transparent request-line peek: separators, long tokens, no line end', () => {
    linear('peekHttpHead (separators)', (n) => Buffer.from(`GET${' \x0b'.repeat(n / 2)}x`, 'latin1'), (b) => peekHttpHead(b, 64 * 1024));
    linear('peekHttpHead (words)', (n) => Buffer.from(`GET ${'a '.repeat(n / 2)}\r\n`, 'latin1'), (b) => peekHttpHead(b, 64 * 1024));
  });

  test('route path globs with several stars in a segment, and ** twice', () => {
    const stars = compilePathGlob('/files/*.*.*');
    linear('glob *.*.*', (n) => '/files/' + '.'.repeat(n), stars);
    const twice = compilePathGlob('/**/x/**/y');
    linear('glob **/x/**/y', (n) => '/x'.repeat(n / 2) + '/z', twice);
    const parts = compilePathGlob('/a*b*c*d');
    linear('glob a*b*c*d', (n) => '/' + 'abc'.repeat(Math.floor(n / 3)), parts);
    const simple = compilePathGlob('/*a/*ab/x*/**');
    linear('glob */*ab/x*/** (a regular expression)', (n) => '/' + 'a'.repeat(n / 2) + '/' + 'ab'.repeat(n / 4) + 'b/x', simple);
  });

  test('hosts with runs of dots; paths; absolute-form', () => {
    linear('canonicalHost', (n) => 'a' + '.'.repeat(n) + 'b.', canonicalHost);
    linear('canonicalHostOf', (n) => 'a' + '.'.repeat(n) + 'b.', canonicalHostOf);
    linear('readPath', (n) => '/' + '%2e'.repeat(Math.floor(n / 3)), readPath);
    linear('normalizePath', (n) => '/' + ';/'.repeat(n / 2), normalizePath);
    linear('readAbsoluteForm', (n) => 'http://' + 'a'.repeat(n), readAbsoluteForm);
  });
});
