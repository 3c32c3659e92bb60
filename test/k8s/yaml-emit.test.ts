// yaml-emit.ts writes plain data as block YAML that reads back as the same data under the API
// server's reading (manifest-yaml.ts: go-yaml v2's YAML 1.1): generated values, and the strings most
// likely to be misread (booleans, numbers in every base, dates, times, indicators, control characters).

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { emitYaml } from '../../src/k8s/yaml-emit.ts';
import { parseManifests } from '../../src/k8s/manifest-yaml.ts';

function roundTrip(value: unknown): unknown {
  const [doc] = parseManifests(emitYaml(value));
  assert.deepEqual(doc!.errors, []);
  return doc!.toJS();
}

const TRICKY = [
  '', ' ', 'y', 'Y', 'n', 'yes', 'No', 'on', 'OFF', 'true', 'False', 'null', 'Null', '~', '0644', '0o644', '0x1F', '0b1', '10_001', '1e3', '1E+3', '.5', '5.', '08', '+1', '-1',
  '.inf', '-.Inf', '.nan', '1:30', '190:20:30', '2024-01-01', '2001-12-14t21:59:43.10-05:00', '<<', '- a', '-', '--', '---', '--flag', '-x', '#', 'a #b', 'a: b', 'a:', ':a', 'a:b',
  '@x', '`x', '!tag', '&anchor', '*alias', '|', '>', '%YAML', '{a}', '[a]', "'", '"', 'a"b', "a'b", 'tab\there', 'line\nbreak', '\u0085', '\u2028', '\u00a0', '\u007f', 'é', '😀', '10m', '32Mi', '1.4.2', '1e', '0xg',
  'registry.example/app:1.0', 'http://x.example/a?b=c', '/etc/dpg/gateway.yaml', '127.0.0.1:15006', '=', 'a=b', '_x', 'a b', ' a', 'a ',
];

describe('yaml-emit: what it writes reads back the same (go-yaml v2 reading)', () => {
  it('tricky strings, as values, keys and list items', () => {
    for (const text of TRICKY) {
      assert.deepEqual(roundTrip({ v: text }), { v: text }, JSON.stringify(text));
      assert.deepEqual(roundTrip({ [text]: 1 }), { [text]: 1 }, `key ${JSON.stringify(text)}`);
      assert.deepEqual(roundTrip({ l: [text, [text], { k: text }] }), { l: [text, [text], { k: text }] }, `item ${JSON.stringify(text)}`);
    }
  });

  it('numbers, booleans, null, empty collections', () => {
    const value = { a: 420, b: -3, c: 1.5, d: 1e21, e: 0, f: true, g: false, h: null, i: [], j: {}, k: [[], {}, [1, [2]]] };
    assert.deepEqual(roundTrip(value), value);
  });

  it('property: generated JSON data round-trips', () => {
    const key = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.constantFrom(...TRICKY));
    const leaf = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.constantFrom(...TRICKY), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null));
    const { tree } = fc.letrec((tie) => ({
      tree: fc.oneof({ depthSize: 'small' }, leaf, fc.array(tie('tree'), { maxLength: 4 }), fc.dictionary(key, tie('tree'), { maxKeys: 4 })),
    }));
    fc.assert(
      fc.property(fc.dictionary(key, tree, { maxKeys: 5 }), (value) => {
        const clean = JSON.parse(JSON.stringify(value)) as unknown; // -0 and the like as JSON has them
        assert.deepEqual(roundTrip(clean), clean);
      }),
      { numRuns: 1000 },
    );
  });
});
