// The keyring fingerprint and key check values: fixed by the documented formula, the same for the
// same keyring in any document order, different when anything that changes results differs, and
// never a spelling of key bytes.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { Keyring } from '../../src/crypto/keyring.ts';
import { fingerprintKeyring, keyCheckValue } from '../../src/crypto/keyring-fingerprint.ts';

const M1 = Buffer.alloc(32, 1).toString('base64');
const M2 = Buffer.alloc(32, 2).toString('base64');
const v = (version: number, material: string, extra: Record<string, unknown> = {}) => ({ version, activeFrom: `${2023 + version}-01-01T00:00:00Z`, material, ...extra });
const ring = (doc: unknown) => Keyring.fromDocument(doc, 'test');

describe('keyring fingerprint', () => {
  const base = { keys: [{ id: 'a', versions: [v(1, M1), v(2, M2)] }, { id: 'b', versions: [v(1, M2)] }] };
  const fp = fingerprintKeyring(ring(base));

  it('a key check value is the first 6 hex digits of HMAC-SHA-256(material, "dpg key check value")', () => {
    const expected = createHmac('sha256', Buffer.alloc(32, 1)).update('dpg key check value').digest('hex').slice(0, 6);
    assert.equal(keyCheckValue(ring(base).get('a', 1)!), expected);
    assert.deepEqual(fp.versions, [`a v1 ${expected}`, `a v2 ${keyCheckValue(ring(base).get('a', 2)!)}`, `b v1 ${keyCheckValue(ring(base).get('b', 1)!)}`]);
    assert.equal(fp.checks.length, 3);
    assert.match(fp.fingerprint, /^sha256:[0-9a-f]{16}$/);
  });

  it('is the same for the same keyring in another order, different when a key, date, flag or the default differs', () => {
    assert.equal(fingerprintKeyring(ring({ defaultKey: 'a', keys: [base.keys[1], base.keys[0]] })).fingerprint, fp.fingerprint);
    const variants = [
      { keys: [{ id: 'a', versions: [v(1, M1), v(2, M1)] }, base.keys[1]] },
      { keys: [{ id: 'a', versions: [v(1, M1), { ...v(2, M2), activeFrom: '2025-06-01T00:00:00Z' }] }, base.keys[1]] },
      { keys: [{ id: 'a', versions: [v(1, M1), v(2, M2, { retired: true })] }, base.keys[1]] },
      { defaultKey: 'b', keys: base.keys },
      { keys: [{ id: 'a2', versions: [v(1, M1), v(2, M2)] }, base.keys[1]] },
      { keys: [base.keys[0]] },
    ];
    const seen = new Set([fp.fingerprint]);
    for (const doc of variants) seen.add(fingerprintKeyring(ring(doc)).fingerprint);
    assert.equal(seen.size, variants.length + 1);
  });

  it('shows no spelling of key bytes', () => {
    const text = JSON.stringify(fp);
    for (const m of [M1, M2]) {
      const bytes = Buffer.from(m, 'base64');
      for (const s of [m, bytes.toString('hex'), bytes.toString('base64url')]) assert.ok(!text.includes(s));
    }
  });
});
