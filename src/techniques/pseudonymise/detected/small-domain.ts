// A keyed permutation of a domain too small for FF1 (SP 800-38G asks for at least 10^6 values): the
// four or five national digits of a phone with a three-digit country code. Rather than FF1 over 20 bits
// walked down to 10^5 (9.5 extra FF1 runs per value on average), the whole domain is shuffled once
// per key and layout — Fisher-Yates, each swap drawn without bias (rejection sampling) from an
// AES-256-CTR stream under a key derived by HMAC-SHA-256 from the field's FF1 key and the tweak, so
// FF1's own key is never used in another mode — and a value is then one table lookup each way.
// Tables are 8 bytes a value (800 KB for 10^5), kept per key (weakly): at most 2^21 values (16 MB)
// per key, the oldest dropped first — phone plans of many small countries each have their own
// layouts (detected/phone.ts), and a body mixing them must not rebuild a table per value.

import { createCipheriv, createHmac } from 'node:crypto';

const MAX_VALUES_PER_KEY = 1 << 21;
const LABEL = 'dpg small-domain permutation v1';
const CHUNK = 65536;

interface Table {
  readonly forward: Int32Array;
  readonly inverse: Int32Array;
}

const tables = new WeakMap<Uint8Array, Map<string, Table>>();

function build(key: Uint8Array, tweak: Uint8Array, size: number): Table {
  const seed = createHmac('sha256', key).update(LABEL).update(Uint8Array.of(0)).update(tweak).digest();
  const stream = createCipheriv('aes-256-ctr', seed, Buffer.alloc(16));
  const zeros = Buffer.alloc(CHUNK);
  let words = new Uint32Array(0);
  let at = 0;
  const next = (): number => {
    if (at >= words.length) {
      const bytes = stream.update(zeros);
      words = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.length >>> 2);
      at = 0;
    }
    return words[at++];
  };
  const forward = new Int32Array(size);
  for (let i = 0; i < size; i++) forward[i] = i;
  for (let i = size - 1; i > 0; i--) {
    const range = i + 1;
    const limit = Math.floor(4294967296 / range) * range;
    let w = next();
    while (w >= limit) w = next();
    const j = w % range;
    const t = forward[i];
    forward[i] = forward[j];
    forward[j] = t;
  }
  seed.fill(0);
  const inverse = new Int32Array(size);
  for (let i = 0; i < size; i++) inverse[forward[i]] = i;
  return { forward, inverse };
}

/** The rank's image (or preimage, `decrypt`) under the keyed shuffle of [0, size) for this tweak. */
export function smallDomainPermute(key: Uint8Array, tweak: Uint8Array, size: number, rank: number, decrypt: boolean): number {
  let byTweak = tables.get(key);
  if (byTweak === undefined) tables.set(key, (byTweak = new Map()));
  const id = `${size}:${Buffer.from(tweak).toString('base64')}`;
  let table = byTweak.get(id);
  if (table === undefined) {
    let held = size;
    for (const t of byTweak.values()) held += t.forward.length;
    for (const [oldest, t] of byTweak) {
      if (held <= MAX_VALUES_PER_KEY) break;
      held -= t.forward.length;
      byTweak.delete(oldest);
    }
    table = build(key, tweak, size);
    byTweak.set(id, table);
  }
  return (decrypt ? table.inverse : table.forward)[rank];
}
