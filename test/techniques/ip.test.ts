// Pseudonymise format ip: every address maps to a valid address of its family and back, exactly
// (IPv6 in canonical form), deterministically per scope; anything else is NOT_AN_IP_ADDRESS.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isIPv4, isIPv6 } from 'node:net';
import { bindTechnique, ctxOf, fakeKeys, reasonOf } from './fake-keys.ts';
import { rng } from '../helpers/rng.ts';

const ip = bindTechnique('Pseudonymise', { format: 'ip' });

describe('Pseudonymise format ip', () => {
  it('IPv4: 2,000 random addresses map to valid IPv4 addresses and back', () => {
    const r = rng(9);
    const seen = new Set<string>();
    for (let k = 0; k < 2000; k++) {
      const value = Array.from({ length: 4 }, () => Math.floor(r() * 256)).join('.');
      const out = ip.forward(value) as string;
      assert.ok(isIPv4(out) && !/(^|\.)0\d/.test(out), out);
      assert.equal(ip.inverse!(out), value);
      seen.add(out);
    }
    assert.ok(seen.size > 1990, 'a permutation: distinct inputs, distinct outputs');
  });

  it('IPv6: canonical addresses round-trip exactly; other spellings come back canonical', () => {
    const r = rng(10);
    for (let k = 0; k < 500; k++) {
      const groups = Array.from({ length: 8 }, () => (r() < 0.3 ? 0 : Math.floor(r() * 65536)));
      const full = groups.map((g) => g.toString(16)).join(':');
      const canonical = new URL(`http://[${full}]/`).hostname.slice(1, -1);
      const out = ip.forward(canonical) as string;
      assert.ok(isIPv6(out), out);
      assert.equal(ip.inverse!(out), canonical);
    }
    assert.equal(ip.inverse!(ip.forward('2001:DB8:0:0::1') as string), '2001:db8::1');
    assert.equal(ip.inverse!(ip.forward('::ffff:192.0.2.1') as string), '::ffff:c000:201');
  });

  it('deterministic per scope, different across scopes; refuses what is not an address', () => {
    assert.equal(ip.forward('192.0.2.10'), ip.forward('192.0.2.10'));
    const other = bindTechnique('Pseudonymise', { format: 'ip' }, ctxOf(fakeKeys('tp=2;du=7')));
    assert.notEqual(other.forward('192.0.2.10'), ip.forward('192.0.2.10'));
    for (const bad of ['192.0.2', '01.2.3.4', 'localhost', '256.1.1.1']) assert.equal(reasonOf(() => ip.forward(bad)), 'NOT_AN_IP_ADDRESS');
    assert.equal(reasonOf(() => ip.forward(3232235777)), 'UNSUPPORTED_VALUE_TYPE');
  });
});
