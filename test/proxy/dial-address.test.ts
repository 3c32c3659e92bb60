// dial-address.ts on its own: which requests are resolved (names, on ports a route for an IP literal or exact name
// covers), which address is chosen, and the cache (refresh interval, shared lookups, failures not
// kept, least recently used out).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DialAddresses } from '../../src/proxy/reading/dial-address.ts';
import { route } from './helpers.ts';

const mask = { manifest: 'customer', jobType: 'Mask' } as const;

function setup(answers: Record<string, string[]>) {
  let now = 0;
  const asked: string[] = [];
  const dial = new DialAddresses({
    routes: [
      route('by-ip', { match: { host: '0x7f000002', port: 8080 }, request: mask }),
      route('by-ip-any-port', { match: { host: '[::ffff:10.0.0.9]' }, request: mask }),
      route('by-name', { match: { host: 'api.partner.test', port: 9000 }, request: mask }),
    ],
    resolve: async (name) => {
      asked.push(name);
      const found = answers[name];
      if (!found) throw Object.assign(new Error('nope'), { code: 'ENOTFOUND' });
      return found;
    },
    refreshMs: 1000,
    now: () => now,
  });
  return { dial, asked, advance: (ms: number) => (now += ms) };
}

test('names are resolved only on ports an IP-literal route covers; addresses never', async () => {
  const { dial } = setup({ 'a.test': ['127.0.0.2'] });
  assert.equal(await dial.pin('a.test', 8080), '127.0.0.2');
  assert.equal(dial.pin('127.0.0.1', 8080), undefined);
  assert.equal(dial.pin('::1', 8080), undefined);
  // The route for 10.0.0.9 names no port: every port is one an IP-literal route covers.
  assert.equal(await dial.pin('a.test', 9000), '127.0.0.2');
});

test('the address a route covers on that port is chosen, else the first; spellings canonicalised', async () => {
  const { dial } = setup({ 'multi.test': ['::1', '127.0.0.3', '2130706434'], 'mapped.test': ['10.0.0.8', '::ffff:10.0.0.9'] });
  assert.equal(await dial.pin('multi.test', 8080), '127.0.0.2');
  assert.equal(await dial.pin('mapped.test', 1234), '10.0.0.9');
});

test('cached for the refresh interval, concurrent lookups shared; failures asked again', async () => {
  const { dial, asked, advance } = setup({ 'a.test': ['127.0.0.2'] });
  await Promise.all([dial.pin('a.test', 8080), dial.pin('a.test', 8080)]);
  await dial.pin('a.test', 8080);
  assert.deepEqual(asked, ['a.test']);
  advance(1001);
  await dial.pin('a.test', 8080);
  assert.deepEqual(asked, ['a.test', 'a.test']);
  await assert.rejects(dial.pin('missing.test', 8080)!, { code: 'ENOTFOUND' });
  await assert.rejects(dial.pin('missing.test', 8080)!, { code: 'ENOTFOUND' });
  assert.equal(asked.filter((n) => n === 'missing.test').length, 2, 'a failure is not cached');
});

test('issue 16 class 9: ports a route for an exact name covers pin too, and a routed address is chosen first', async () => {
  const asked: string[] = [];
  const dial = new DialAddresses({
    routes: [
      route('by-name', { match: { host: 'api.partner.test', port: 9000 }, request: mask }),
      route('wildcard', { match: { host: '*.partner.test', port: 9100 }, request: mask }),
    ],
    resolve: async (name) => {
      asked.push(name);
      return ['10.0.0.1', '10.0.0.7'];
    },
    refreshMs: 1000,
    // The route table: 10.0.0.7 is an address api.partner.test resolved to.
    routed: (address, port) => address === '10.0.0.7' && port === 9000,
  });
  assert.equal(await dial.pin('ingress.test', 9000), '10.0.0.7');
  assert.equal(dial.pin('ingress.test', 9100), undefined, 'a wildcard route has no addresses to count');
  assert.equal(dial.pin('ingress.test', 8080), undefined);
  assert.deepEqual(asked, ['ingress.test']);
});
