// The proxy's reading of hosts and authorities (src/proxy/reading/canonical-host.ts): IPv4 in every
// spelling inet_aton accepts, IPv6 with zones and brackets, IDNA names, ports, userinfo, junk.
// Never throws; an accepted host is canonical (reading it again gives itself); ports are 1–65535.

import assert from 'node:assert/strict';
import fc from 'fast-check';
import { canonicalHostOf, readAuthority } from '../../../src/proxy/reading/canonical-host.ts';
import type { FuzzTarget } from '../harness.ts';

const hostPiece = fc.oneof(
  fc.constantFrom('127', '0x7f', '0177', '1', '0', '255', '256', '4294967295', '4294967296', '.', '..', ':', '::', '[', ']', '%', '%31', '%2e', 'ffff', 'xn--', 'xn--nxasmq6b', 'ß', 'Ⅸ', 'é', '\u200d', '-', '_', 'API', 'example', 'com', '@', '/', '\\', '#', '?', ' ', '\u0000', '%eth0'),
  fc.string({ maxLength: 3 }),
);
const hostArb = fc.array(hostPiece, { maxLength: 10 }).map((p) => p.join(''));
const authorityArb = fc.tuple(hostArb, fc.option(fc.oneof(fc.integer({ min: -1, max: 70000 }).map(String), fc.constantFrom('', '080', '+1', '1e3', ' 80')), { nil: undefined }), fc.boolean()).map(
  ([h, port, bracket]) => `${bracket ? `[${h}]` : h}${port === undefined ? '' : `:${port}`}`,
);

export const canonicalHostTarget: FuzzTarget<{ host: string; authority: string }> = {
  name: 'canonical-host',
  covers: 'proxy host reading (src/proxy/reading/canonical-host.ts): canonicalHostOf, readAuthority',
  arbitrary: fc.record({ host: hostArb, authority: authorityArb }),
  check({ host, authority }) {
    const h = canonicalHostOf(host);
    if (h !== undefined) {
      assert.equal(canonicalHostOf(h), h, 'a canonical host is not its own canonical form');
      assert.ok(/^[a-z0-9_.:-]+$/.test(h), 'a canonical host outside lower-case letters, digits and . _ - :');
    }
    const a = readAuthority(authority, 443);
    if (a !== undefined) {
      assert.ok(Number.isInteger(a.port) && a.port >= 1 && a.port <= 65535, 'port out of range');
      assert.equal(canonicalHostOf(a.host), a.host, 'the authority host is not canonical');
    }
  },
  cost: 0.3,
};

export default canonicalHostTarget;
