// Route matching: table-driven cases for every criterion, first match wins, and paths that try to
// slip past a glob with escapes or dot segments.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ProxyRoute } from '../../src/config/types.ts';
import { compileContentType, compileHost, compilePathGlob, compileRoutes, normalizePath, type RequestFacts } from '../../src/proxy/reading/routes.ts';

const facts = (f: Partial<RequestFacts> = {}): RequestFacts => ({
  host: 'api.partner.example',
  port: 443,
  method: 'POST',
  path: '/v1/customers/1',
  contentType: 'application/json',
  ...f,
});

const r = (name: string, match: ProxyRoute['match']): ProxyRoute => ({ name, match, onError: 'reject', maxBodyBytes: 1024 });

test('host: exact (case-insensitive), wildcard subdomains at any depth, any', () => {
  const cases: [string | undefined, string, boolean][] = [
    ['api.partner.example', 'api.partner.example', true],
    ['API.Partner.Example', 'api.partner.example', true],
    ['api.partner.example', 'x.api.partner.example', false],
    ['*.partner.example', 'api.partner.example', true],
    ['*.partner.example', 'a.b.partner.example', true],
    ['*.partner.example', 'partner.example', false],
    ['*.partner.example', 'evilpartner.example', false],
    ['[::1]', '::1', true],
    [undefined, 'anything', true],
    ['*', 'anything', true],
  ];
  for (const [pattern, host, expected] of cases) assert.equal(compileHost(pattern)(host), expected, `${pattern} ~ ${host}`);
});

test('path glob: * one segment, ** any number', () => {
  const cases: [string, string, boolean][] = [
    ['/v1/customers/**', '/v1/customers', true],
    ['/v1/customers/**', '/v1/customers/', true],
    ['/v1/customers/**', '/v1/customers/1/cards', true],
    ['/v1/customers/**', '/v1/customersX', false],
    ['/v1/*/cards', '/v1/42/cards', true],
    ['/v1/*/cards', '/v1/42/43/cards', false],
    ['/v1/c*', '/v1/cards', true],
    ['/v1/**/cards', '/v1/a/b/cards', true],
    ['/v1/**/cards', '/v1/cards', true],
    ['/exact.json', '/exactXjson', false],
    ['**', '/anything/at/all', true],
  ];
  for (const [glob, path, expected] of cases) assert.equal(compilePathGlob(glob)(path), expected, `${glob} ~ ${path}`);
});

/** The glob as a regular expression (what compilePathGlob compiled to before it became linear). */
function referenceGlob(glob: string): RegExp {
  const literal = (seg: string): string => seg.split('*').map((l) => l.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('[^/]*');
  let source = '^';
  glob.split('/').forEach((seg, i) => {
    if (i === 0) source += seg === '' ? '' : seg === '**' ? '.*' : literal(seg);
    else source += seg === '**' ? '(?:/.*)?' : '/' + literal(seg);
  });
  return new RegExp(source + '$');
}

test('path glob: the linear matcher agrees with the regular expression on random globs and paths', () => {
  let seed = 7;
  const random = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n);
  const pick = <T,>(items: readonly T[]): T => items[random(items.length)];
  const globSegments = ['a', 'b', '*', '**', 'a*', '*b', 'a*b', '*.*', 'a**b', '', '.'];
  const pathSegments = ['a', 'b', 'ab', 'aab', 'a.b', '', '.', 'ba', 'x'];
  for (let g = 0; g < 300; g++) {
    const glob = (random(5) === 0 ? '' : '/') + Array.from({ length: 1 + random(4) }, () => pick(globSegments)).join('/');
    const matcher = compilePathGlob(glob);
    const reference = referenceGlob(glob);
    for (let k = 0; k < 40; k++) {
      const path = '/' + Array.from({ length: random(5) }, () => pick(pathSegments)).join('/');
      assert.equal(matcher(path), reference.test(path), `${glob} ~ ${path}`);
    }
  }
});

test('paths are normalised before matching: escapes of unreserved characters, dot segments, //', () => {
  assert.equal(normalizePath('/v1/%63ustomers/1'), '/v1/customers/1');
  assert.equal(normalizePath('/v1/x/../customers/1'), '/v1/customers/1');
  assert.equal(normalizePath('/v1/./customers//1'), '/v1/customers/1');
  assert.equal(normalizePath('/v1/a%2Fb'), '/v1/a%2Fb'); // reserved escapes stay
  const table = compileRoutes([r('c', { path: '/v1/customers/**' })]);
  for (const path of ['/v1/%63ustomers/1', '/v1/x/../customers/1', '/v1//customers/1']) {
    assert.equal(table.match(facts({ path }))?.name, 'c', path);
  }
});

test('content type: exact, type/*, any; parameters ignored by the caller', () => {
  assert.equal(compileContentType('application/json')('application/json'), true);
  assert.equal(compileContentType('application/json')('application/vnd.x+json'), false);
  assert.equal(compileContentType('application/*')('application/xml'), true);
  assert.equal(compileContentType('application/*')('text/xml'), false);
  assert.equal(compileContentType(undefined)(''), true);
});

test('all criteria together; first match wins; intercepts() looks at host and port only', () => {
  const table = compileRoutes([
    r('first', { host: '*.partner.example', port: 443, methods: ['post', 'PUT'], path: '/v1/customers/**', contentType: 'application/json' }),
    r('second', { host: 'api.partner.example' }),
    r('other-port', { host: 'internal.example', port: 8443 }),
  ]);
  assert.equal(table.match(facts())?.name, 'first');
  assert.equal(table.match(facts({ method: 'GET' }))?.name, 'second');
  assert.equal(table.match(facts({ contentType: 'text/plain' }))?.name, 'second');
  assert.equal(table.match(facts({ host: 'b.partner.example', method: 'GET' })), undefined);
  assert.equal(table.match(facts({ host: 'internal.example', port: 8443 }))?.name, 'other-port');
  assert.equal(table.intercepts('api.partner.example', 443), true);
  assert.equal(table.intercepts('internal.example', 443), false);
  assert.equal(table.intercepts('internal.example', 8443), true);
  assert.equal(table.intercepts('elsewhere.example', 443), false);
});

test('hosts with trailing dots are the same host to routes and to CONNECT interception', () => {
  const table = compileRoutes([r('c', { host: 'api.partner.example', path: '/v1/customers/**' }), r('w', { host: '*.wild.example' })]);
  assert.equal(table.match(facts({ host: 'api.partner.example.' }))?.name, 'c');
  assert.equal(table.match(facts({ host: 'API.partner.example..' }))?.name, 'c');
  assert.equal(table.match(facts({ host: 'a.wild.example.' }))?.name, 'w');
  assert.equal(table.intercepts('api.partner.example.', 443), true);
  assert.equal(table.match(facts({ host: 'partner.example.' })), undefined);
});

test('path parameters (;x) are ignored when matching, in every segment; case is not (lenient default)', () => {
  assert.equal(normalizePath('/v1/customers;x=1'), '/v1/customers');
  assert.equal(normalizePath('/v1;a=b/customers;jsessionid=9/1'), '/v1/customers/1');
  assert.equal(normalizePath('/v1/x/..;/customers/1'), '/v1/customers/1');
  const table = compileRoutes([r('c', { path: '/v1/customers/**' })]);
  for (const path of ['/v1/customers;x=1', '/v1/customers;x=1/2', '/v1;v=2/customers/1', '/v1/other/..;/customers/1']) {
    assert.equal(table.match(facts({ path }))?.name, 'c', path);
  }
  assert.equal(table.match(facts({ path: '/V1/Customers/1' }))?.name, 'c');
  const exact = compileRoutes([r('e', { path: '/v1/customers/**', pathMatch: 'exact' })]);
  assert.equal(exact.match(facts({ path: '/V1/Customers/1' })), undefined);
});
