// Route matching: table-driven cases for every criterion, first match wins, and paths that try to
// slip past a glob with escapes or dot segments.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ProxyRoute } from '../../src/config/types.ts';
import fc from 'fast-check';
import { bareRoutePath, compileContentType, compileHost, compilePathGlob, compileRoutes, normalizePath, type RequestFacts } from '../../src/proxy/reading/routes.ts';

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

test('lenient paths (issue 16, class 3): case, format suffix, trailing dots, spaces and slashes ignored; exact opts out', () => {
  const cases: [string, string][] = [
    ['/v1/customers.json', '/v1/customers'],
    ['/v1/customers.json.', '/v1/customers'],
    ['/v1/customers.tar.gz', '/v1/customers'],
    ['/v1/customers%20', '/v1/customers'],
    ['/v1/customers.%20.', '/v1/customers'],
    ['/v1./customers/', '/v1/customers'],
    ['/v1%20/customers//', '/v1/customers'],
    ['/v1/.well-known', '/v1/.well-known'],
    ['/', '/'],
    ['/...', '/'],
  ];
  for (const [path, bare] of cases) assert.equal(bareRoutePath(path), bare, path);
  const table = compileRoutes([r('exact', { path: '/exact/**', pathMatch: 'exact' }), r('c', { path: '/v1/customers/**' }), r('one', { path: '/v1/orders' }), r('slash', { path: '/v1/items/' })]);
  for (const path of ['/V1/Customers', '/v1/customers.json', '/v1/CUSTOMERS.XML', '/v1/customers.', '/v1/customers%20', '/v1/customers/', '/v1./customers/1']) {
    assert.equal(table.match(facts({ path }))?.name, 'c', path);
  }
  for (const path of ['/v1/orders.json', '/V1/ORDERS', '/v1/orders/', '/v1/orders..']) assert.equal(table.match(facts({ path }))?.name, 'one', path);
  for (const path of ['/v1/items', '/v1/items.json', '/V1/ITEMS/']) assert.equal(table.match(facts({ path }))?.name, 'slash', path);
  assert.equal(table.match(facts({ path: '/v1/orders/1' })), undefined);
  assert.equal(table.match(facts({ path: '/exact/1' }))?.name, 'exact');
  for (const path of ['/EXACT/1', '/exact.json']) assert.equal(table.match(facts({ path })), undefined, path);
  assert.equal(table.coversUnnamed(facts({ path: '/V1/Customers.json' })), false); // hostKind any, not a name
});

test('property: every spelling a lenient route must cover is matched; an exact route keeps only its own', () => {
  const table = compileRoutes([r('c', { path: '/v1/customers/**' })]);
  const exact = compileRoutes([r('e', { path: '/v1/customers/**', pathMatch: 'exact' })]);
  const caseOf = (s: string, mask: number): string => [...s].map((c, i) => ((mask >> i) & 1 ? c.toUpperCase() : c)).join('');
  const trailer = fc.constantFrom('', '.', '..', '%20', '.%20', ' ', '/', '//');
  const ext = fc.oneof(fc.constant(''), fc.stringMatching(/^\.[a-zA-Z0-9]{1,8}$/));
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 2 ** 12 - 1 }), fc.constantFrom('', '/1', '/1/cards'), ext, trailer, (mask, sub, e, t) => {
      const path = `/${caseOf('v1/customers', mask)}${sub}${e}${t}`;
      assert.equal(table.match(facts({ path }))?.name, 'c', path);
      if (mask === 0 && sub !== '') assert.equal(exact.match(facts({ path }))?.name, 'e', path);
      if (mask !== 0 && /[a-z]/.test('v1/customers'.slice(0, 12).split('').filter((_, i) => (mask >> i) & 1).join(''))) {
        assert.equal(exact.match(facts({ path })), undefined, path);
      }
    }),
    { numRuns: 500 },
  );
});
