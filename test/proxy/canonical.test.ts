// Issue 8, the pure readers: canonical hosts (every IP literal spelling), canonical paths and their
// refusals, request targets per listener kind, body kinds, route selection by type, and route
// host names reached by their addresses (with an injected resolver: no DNS).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import type { ProxyRoute } from '../../src/config/types.ts';
import { createLogger } from '../../src/core/logger.ts';
import { bodyKindOf, sniffBodyKind } from '../../src/proxy/reading/body-kind.ts';
import { canonicalHostOf, formatAuthority, readAuthority } from '../../src/proxy/reading/canonical-host.ts';
import { readPath } from '../../src/proxy/reading/canonical-path.ts';
import { forwardTarget, reverseBase, reverseTarget, tunnelTarget } from '../../src/proxy/reading/request-target.ts';
import { RouteHostAddresses } from '../../src/proxy/reading/route-host-addresses.ts';
import { compileRoutes, type RequestFacts } from '../../src/proxy/reading/routes.ts';

const silent = createLogger({ level: 'silent' });

test('IPv4 literals in every WHATWG spelling are one address', () => {
  for (const spelling of ['127.0.0.1', '127.1', '127.0.1', '2130706433', '0x7f000001', '0x7F000001', '0177.0.0.1', '0x7f.0.0.1', '0177.1', '127.0.0.1.', '127.0.0.%31']) {
    assert.equal(canonicalHostOf(spelling), '127.0.0.1', spelling);
  }
  assert.equal(canonicalHostOf('0'), '0.0.0.0');
  for (const bad of ['256.0.0.1', '1.2.3.4.5', '09.1.1.1', 'foo.0x10', '0x100000000']) assert.equal(canonicalHostOf(bad), undefined, bad);
});

test('IPv6 literals: compressed lower case, IPv4-mapped to IPv4, zone ids refused', () => {
  for (const spelling of ['::1', '[::1]', '[0::1]', '[0:0:0:0:0:0:0:1]', '[::0:1]', '0000::0001']) assert.equal(canonicalHostOf(spelling), '::1', spelling);
  assert.equal(canonicalHostOf('[2001:DB8:0:0::1]'), '2001:db8::1');
  for (const mapped of ['[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[0:0:0:0:0:ffff:7f00:0001]', '::FFFF:127.0.0.1']) {
    assert.equal(canonicalHostOf(mapped), '127.0.0.1', mapped);
  }
  assert.equal(canonicalHostOf('[fe80::1%25eth0]'), undefined);
  assert.equal(canonicalHostOf('[fe80::1%eth0]'), undefined);
  assert.equal(canonicalHostOf('[::1'), undefined);
});

test('names: lower case, IDNA, trailing dots dropped; anything else refused', () => {
  assert.equal(canonicalHostOf('API.Partner.Example.'), 'api.partner.example');
  assert.equal(canonicalHostOf('Bücher.example'), 'xn--bcher-kva.example');
  assert.equal(canonicalHostOf('a_b.example'), 'a_b.example');
  for (const bad of ['a b', 'a/b', '*.example', 'a%2fb', '', 'a\\b']) assert.equal(canonicalHostOf(bad), undefined, JSON.stringify(bad));
});

test('authorities: CONNECT (port required), URLs and Host headers (default port)', () => {
  assert.deepEqual(readAuthority('2130706433:8443'), { host: '127.0.0.1', port: 8443 });
  assert.deepEqual(readAuthority('[::ffff:127.0.0.1]:80'), { host: '127.0.0.1', port: 80 });
  assert.deepEqual(readAuthority('[0::1]:443'), { host: '::1', port: 443 });
  assert.deepEqual(readAuthority('API.example.', 443), { host: 'api.example', port: 443 });
  assert.deepEqual(readAuthority('api.example:', 80), { host: 'api.example', port: 80 });
  for (const bad of ['api.example', 'a:0', 'a:65536', 'a:8x', 'u@a:1', '::1:443', '[::1]x:1', 'a b:1']) assert.equal(readAuthority(bad), undefined, bad);
  assert.equal(formatAuthority('::1', 8443, 'https'), '[::1]:8443');
  assert.equal(formatAuthority('api.example', 443, 'https'), 'api.example');
});

test('paths: one canonical form, which is what goes upstream', () => {
  const cases: [string, string, string][] = [
    // sent, forwarded path, what routes match
    ['/v1/%63ustomers/1', '/v1/customers/1', '/v1/customers/1'],
    ['/v1/x/../customers/1', '/v1/customers/1', '/v1/customers/1'],
    ['/v1/%2e%2E/v1/customers/1', '/v1/customers/1', '/v1/customers/1'],
    ['/v1/./customers/.', '/v1/customers/', '/v1/customers/'],
    ['/../../v1/customers', '/v1/customers', '/v1/customers'],
    ['/v1//customers/1', '/v1//customers/1', '/v1/customers/1'],
    ['/v1/customers;jsessionid=1/2', '/v1/customers;jsessionid=1/2', '/v1/customers/2'],
    ['/v1/a%3fb%7e', '/v1/a%3Fb~', '/v1/a%3Fb~'],
    ['/v1/a//../b', '/v1/a/b', '/v1/a/b'],
  ];
  for (const [sent, path, routePath] of cases) {
    const r = readPath(sent);
    assert.ok(r.ok, sent);
    assert.equal(r.path, path, sent);
    assert.equal(r.routePath, routePath, sent);
  }
  const withQuery = readPath('/v1/x/../c?card%4Eumber=1&a=/../b');
  assert.ok(withQuery.ok);
  assert.equal(withQuery.path, '/v1/c');
  assert.equal(withQuery.query, 'card%4Eumber=1&a=/../b'); // the query is forwarded as sent
});

test('paths: what stays ambiguous is refused', () => {
  const refused = [
    '/v1%2Fcustomers', '/v1%2fcustomers', '/v1%5Ccustomers', '/v1\\customers', '//x/v1/customers', '/v1/customers#', '/v1/customers#x',
    '/v1/customers%00', '/v1/customers%0a', '/v1/customers%7F', '/v1/customers?x=%00', '/v1/customers\x00', '/v1/customers\x01',
    '/v1/cust omers', '/v1/customers\x7f', '/v1/caf\u00e9', '/v1/%252F', '/v1/%zz', '/v1/%4', '/v1/customers?x=%g1',
    '/v1/x/..;/customers', '/v1/x/.;a/customers', '/v1/x/%2e%2e;/customers', '*', 'v1/customers', '',
  ];
  for (const target of refused) assert.equal(readPath(target).ok, false, JSON.stringify(target));
  // A literal `%` that is not double-encoding is kept as an escape.
  assert.equal((readPath('/v1/100%25') as { path: string }).path, '/v1/100%25');
});

test('request targets per listener kind', () => {
  const fwd = forwardTarget('HTTP://0x7f000001:8080/v1/x/../customers?q=1');
  assert.ok(fwd.ok);
  assert.deepEqual(fwd.target, { scheme: 'http', host: '127.0.0.1', port: 8080, path: '/v1/customers?q=1', hostHeader: '127.0.0.1:8080' });
  assert.equal((forwardTarget('https://[::ffff:127.0.0.1]') as { target: { host: string; path: string } }).target.host, '127.0.0.1');
  for (const bad of ['http://u@127.0.0.1/', 'http://127.0.0.1\\@x/', 'http://0.0.0.0:80/', 'http://[::]/', 'http://h/a#', 'ftp://h/', 'http://h//x/y']) {
    assert.equal(forwardTarget(bad).ok, false, bad);
  }

  const tunnel = { scheme: 'https' as const, host: '127.0.0.1', port: 8443 };
  const same = tunnelTarget('https://2130706433:8443/v1/customers/1', tunnel, '127.0.0.1:8443');
  assert.ok(same.ok);
  assert.equal(same.target.path, '/v1/customers/1');
  assert.equal(tunnelTarget('https://127.0.0.1:9999/v1/customers', tunnel, undefined).ok, false);
  assert.equal(tunnelTarget('https://other.example:8443/v1/customers', tunnel, undefined).ok, false);
  assert.equal(tunnelTarget('/v1/customers', tunnel, 'other.example').ok, false);
  assert.equal(tunnelTarget('/v1/customers', tunnel, '127.0.0.1:9').ok, false);
  assert.ok(tunnelTarget('/v1/customers', tunnel, '127.0.0.1').ok); // a Host header without the port
  assert.ok(tunnelTarget('/v1/customers', tunnel, '[::ffff:127.0.0.1]:8443').ok);

  const base = reverseBase('https://API.example:443/v1/');
  assert.deepEqual(base, { scheme: 'https', host: 'api.example', port: 443, basePath: '/v1', hostHeader: 'api.example' });
  const rev = reverseTarget(base, '/../admin?x=1');
  assert.ok(rev.ok);
  assert.equal(rev.target.path, '/v1/admin?x=1'); // `..` cannot climb out of the base path
  assert.equal(reverseTarget(base, 'http://elsewhere/x').ok, false);
});

test('body kinds: declared, +json/+xml, untyped bodies read as the route type or by their first byte', () => {
  const json = Buffer.from(' \n{"a":1}');
  const kind = (mediaType: string, body: Buffer = json, routeContentType?: string, fixed?: 'JSON' | 'SQL') =>
    bodyKindOf({ mediaType, body, routeContentType, fixed });
  assert.equal(kind('application/vnd.api+json'), 'JSON');
  assert.equal(kind('application/soap+xml'), 'XML');
  assert.equal(kind('text/plain'), 'JSON');
  assert.equal(kind(''), 'JSON');
  assert.equal(kind('application/octet-stream', Buffer.from('<a/>')), 'XML');
  assert.equal(kind('text/plain', Buffer.from('hello')), undefined);
  assert.equal(kind('text/plain', Buffer.from('hello'), 'application/json'), 'JSON'); // read as the route's type, or refused
  assert.equal(kind('text/plain', Buffer.from('a=1'), 'application/x-www-form-urlencoded'), 'FORM');
  assert.equal(kind('image/png'), undefined);
  assert.equal(kind('image/png', json, undefined, 'SQL'), 'SQL');
  assert.equal(sniffBodyKind(Buffer.from('\ufeff[1]')), 'JSON');
});

const facts = (f: Partial<RequestFacts> = {}): RequestFacts => ({ host: 'api.example', port: 443, method: 'POST', path: '/v1/customers/1', contentType: 'text/plain', ...f });
const r = (name: string, match: ProxyRoute['match']): ProxyRoute => ({ name, match, onError: 'reject', maxBodyBytes: 1024 });

test('route selection: contentType picks among routes but never takes a request off a routed path', () => {
  const table = compileRoutes([
    r('json', { host: 'api.example', path: '/v1/customers/**', contentType: 'application/json' }),
    r('xml', { host: 'api.example', path: '/v1/customers/**', contentType: 'application/xml' }),
  ]);
  assert.deepEqual(table.select(facts({ contentType: 'application/xml' })), { route: table.match(facts({ contentType: 'application/xml' })), contentTypeMatched: true });
  assert.equal(table.select(facts({ contentType: 'application/xml' }))?.route.name, 'xml');
  const plain = table.select(facts({ contentType: 'text/plain' }));
  assert.equal(plain?.route.name, 'json');
  assert.equal(plain?.contentTypeMatched, false);
  assert.equal(table.select(facts({ path: '/v2/x' })), undefined);
});

test('route hosts in the config are canonical too: 0x7f.1 and [::ffff:127.0.0.1] are 127.0.0.1', () => {
  const table = compileRoutes([r('a', { host: '0x7f.1', port: 80 }), r('b', { host: '[0:0::1]' })]);
  for (const host of ['127.0.0.1', '2130706433', '[::ffff:127.0.0.1]', '::ffff:7f00:1']) assert.equal(table.match(facts({ host, port: 80 }))?.name, 'a', host);
  assert.equal(table.match(facts({ host: '::1' }))?.name, 'b');
  assert.equal(table.intercepts('0177.0.0.1', 80), true);
});

test('a routed host name reached by one of its addresses is that host; lookups refresh and survive failures', async () => {
  let answer: string[] | Error = ['::ffff:192.0.2.7', '2001:DB8::7'];
  let now = 0;
  const addresses = new RouteHostAddresses({
    names: ['api.example', '*.wild.example', '10.0.0.1'],
    resolve: async (name) => {
      assert.equal(name, 'api.example'); // only exact names are looked up
      if (answer instanceof Error) throw answer;
      return answer;
    },
    refreshMs: 60_000,
    logger: silent,
    now: () => now,
  });
  assert.equal(addresses.ready, false);
  await addresses.start();
  assert.equal(addresses.ready, true);
  const table = compileRoutes([r('named', { host: 'api.example', path: '/v1/customers/**' })], addresses);
  for (const host of ['192.0.2.7', '0xc0000207', '[::ffff:192.0.2.7]', '2001:db8::7', '[2001:db8:0::7]']) {
    assert.equal(table.match(facts({ host }))?.name, 'named', host);
    assert.equal(table.intercepts(host, 443), true, host);
  }
  assert.equal(table.match(facts({ host: '192.0.2.8' })), undefined);

  // A failed lookup keeps what was known; a new answer adds; an address unseen for a day is dropped.
  answer = Object.assign(new Error('lookup failed'), { code: 'EAI_AGAIN' });
  await addresses.refresh();
  assert.equal(table.match(facts({ host: '192.0.2.7' }))?.name, 'named');
  answer = ['192.0.2.9'];
  now = 1000;
  await addresses.refresh();
  assert.equal(table.match(facts({ host: '192.0.2.9' }))?.name, 'named');
  assert.equal(table.match(facts({ host: '192.0.2.7' }))?.name, 'named');
  now = 25 * 3600_000;
  await addresses.refresh();
  assert.equal(table.match(facts({ host: '192.0.2.7' })), undefined);
  assert.equal(table.match(facts({ host: '192.0.2.9' }))?.name, 'named');
  addresses.close();
});

/** Spellings of IPv4 addresses in the forms inet_aton and the WHATWG parser know, plus near misses. */
function ipv4Spellings(): string[] {
  const out = new Set<string>();
  const forms = (n: number): string[] => [String(n), `0x${n.toString(16)}`, `0X${n.toString(16).toUpperCase()}`, `0${n.toString(8)}`];
  for (const [a, b, c, d] of [[127, 0, 0, 1], [10, 1, 2, 3], [192, 168, 0, 255], [0, 0, 0, 0], [255, 255, 255, 255]]) {
    const n = ((a << 24) >>> 0) + (b << 16) + (c << 8) + d;
    for (const x of forms(n)) out.add(x);
    for (const x of forms(a)) for (const y of forms((b << 16) + (c << 8) + d)) out.add(`${x}.${y}`);
    for (const x of forms(a)) for (const y of forms(b)) out.add(`${x}.${y}.${(c << 8) + d}`);
    for (const x of forms(a)) for (const y of forms(d)) out.add(`${x}.${b}.${c}.${y}`);
    out.add(`${a}.${b}.${c}.${d}.`);
  }
  for (const miss of ['1.2.3.4.5', '256.1.1.1', '08.1.1.1', '1.2.3.09', '0x1g.1.1.1', '4294967296', '1..2.3', '1.2.3.4 ', '0x', '00x1']) out.add(miss);
  return [...out];
}

test('differential: IPv4 spellings read like Node URL does, and like inet_aton (what the resolver dials) wherever both accept', (t) => {
  const spellings = ipv4Spellings();
  for (const s of spellings) {
    let viaUrl: string | undefined;
    try {
      viaUrl = new URL(`http://${s}/`).hostname;
    } catch {
      viaUrl = undefined;
    }
    const ours = canonicalHostOf(s);
    if (viaUrl !== undefined && /^\d+\.\d+\.\d+\.\d+$/.test(viaUrl)) assert.equal(ours, viaUrl, s);
  }
  const py = spawnSync('python3', ['-c', INET_ATON], { input: JSON.stringify(spellings), encoding: 'utf8' });
  if (py.status !== 0) {
    t.skip('python3 is not available: the inet_aton comparison did not run');
    return;
  }
  const aton = JSON.parse(py.stdout) as (string | null)[];
  let compared = 0;
  spellings.forEach((s, i) => {
    const ours = canonicalHostOf(s);
    if (aton[i] === null || ours === undefined || !/^\d+\.\d+\.\d+\.\d+$/.test(ours)) return;
    compared++;
    assert.equal(ours, aton[i], `${s}: inet_aton reads ${aton[i]}, the gateway ${ours}`);
  });
  assert.ok(compared > 50, `compared ${compared}`);
});

/** Python reading a JSON list of strings from stdin, printing socket.inet_aton's address for each (or null). */
const INET_ATON = `
import json, socket, sys
out = []
for s in json.load(sys.stdin):
    try:
        out.append(socket.inet_ntoa(socket.inet_aton(s)))
    except OSError:
        out.append(None)
print(json.dumps(out))
`;
