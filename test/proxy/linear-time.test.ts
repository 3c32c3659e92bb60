// Review finding 10: a regular expression that backtracks on a long hostile input stalls the event
// loop for every connection (`X: a` + 16k spaces + `a` took 236 ms in the transparent listener's
// header peek). Each reader of request bytes in src/proxy and src/proxy/transparent is given the
// worst input of its shape at the size a request can carry (Node's 16 KiB head) and must finish
// well under a generous bound: the linear readers take well under a millisecond; a quadratic one
// takes hundreds.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { canonicalHostOf } from '../../src/proxy/reading/canonical-host.ts';
import { readPath } from '../../src/proxy/reading/canonical-path.ts';
import { readAbsoluteForm } from '../../src/proxy/reading/request-target.ts';
import { canonicalHost, compilePathGlob, normalizePath } from '../../src/proxy/reading/routes.ts';
import { peekHttpHead } from '../../src/proxy/transparent/http-head.ts';

const SIZE = 16 * 1024;
/** Generous: a loaded 2-core machine runs the linear versions in a few ms. */
const BOUND_MS = 100;

function bounded(name: string, run: () => unknown): void {
  run(); // warm-up (compilation), not measured
  const started = performance.now();
  run();
  const ms = performance.now() - started;
  assert.ok(ms < BOUND_MS, `${name}: ${ms.toFixed(1)} ms for a ${SIZE}-byte hostile input`);
}

describe('readers of request bytes run in linear time on hostile input', () => {
  test('transparent header peek: a header value of spaces between two letters', () => {
    const head = Buffer.from(`GET / HTTP/1.1\r\nHost: a.test\r\nX: a${' '.repeat(SIZE - 40)}a\r\n\r\n`, 'latin1');
    bounded('peekHttpHead (spaces in a value)', () => peekHttpHead(head, 64 * 1024));
    const tabs = Buffer.from(`GET / HTTP/1.1\r\nHost: a.test\r\nX:${' \t'.repeat(SIZE / 2 - 20)}\r\n\r\n`, 'latin1');
    bounded('peekHttpHead (blank value)', () => peekHttpHead(tabs, 64 * 1024));
  });

  test('transparent request-line peek: separators, long tokens, no line end', () => {
    bounded('peekHttpHead (separators)', () => peekHttpHead(Buffer.from(`GET${' \x0b'.repeat(SIZE / 2)}x`, 'latin1'), 64 * 1024));
    bounded('peekHttpHead (words)', () => peekHttpHead(Buffer.from(`GET ${'a '.repeat(SIZE / 2)}\r\n`, 'latin1'), 64 * 1024));
  });

  test('route path globs with several stars in a segment, and ** twice', () => {
    const stars = compilePathGlob('/files/*.*.*');
    bounded('glob *.*.*', () => stars('/files/' + '.'.repeat(SIZE)));
    const twice = compilePathGlob('/**/x/**/y');
    bounded('glob **/x/**/y', () => twice('/x'.repeat(SIZE / 2) + '/z'));
    const parts = compilePathGlob('/a*b*c*d');
    bounded('glob a*b*c*d', () => parts('/' + 'abc'.repeat(SIZE / 3)));
    const simple = compilePathGlob('/*a/*ab/x*/**');
    bounded('glob */*ab/x*/** (a regular expression)', () => simple('/' + 'a'.repeat(SIZE / 2) + '/' + 'ab'.repeat(SIZE / 4) + 'b/x'));
  });

  test('hosts with runs of dots; paths; absolute-form', () => {
    bounded('canonicalHost', () => canonicalHost('a' + '.'.repeat(SIZE) + 'b.'));
    bounded('canonicalHostOf', () => canonicalHostOf('a' + '.'.repeat(1000) + 'b.'));
    bounded('readPath', () => readPath('/' + '%2e'.repeat(SIZE / 3)));
    bounded('normalizePath', () => normalizePath('/' + ';/'.repeat(SIZE / 2)));
    bounded('readAbsoluteForm', () => readAbsoluteForm('http://' + 'a'.repeat(SIZE)));
  });
});
