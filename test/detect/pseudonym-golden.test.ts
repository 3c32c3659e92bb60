// Pins the pseudonyms of detected values of every kind (issue 17, throughput work): pseudonyms are
// a compatibility contract, so making Pseudonymise faster must not change one byte of them. The
// golden file was written by the code before that work (commit c007aff's schemes and walk) and
// holds, per kind, 300 generated values: alone as a whole field, inside a short note, and next to
// a digit group and another value (the cases where the walk in context steps on). Reconstruct of
// each output must give the input back.
//
// The inputs are in the golden file too, so a change of fast-check's generators cannot move them.
// `DPG_WRITE_GOLDEN=1 node scripts/run-tests.mjs pseudonym-golden` rewrites the file: only for a
// deliberate, documented change of the pseudonyms (never to make this test pass).

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import fc from 'fast-check';
import { job, testEngine } from '../helpers/engine.ts';
import { KIND_ARBS } from '../helpers/detected-values.ts';

const FILE = new URL('./pseudonym-golden.json', import.meta.url);
const PER_KIND = 300;
const engine = testEngine();

type Golden = Record<string, [input: string, output: string][]>;

const notesOf = (jobType: 'Pseudonymise' | 'Reconstruct', notes: readonly string[]): string[] =>
  (JSON.parse(engine.protectDocument(job('customer', jobType), JSON.stringify({ notes })).dataSet as string) as { notes: string[] }).notes;

/** The texts of one kind: a whole value, a short note, a value next to a digit group and another value. */
function inputsOf(kind: keyof typeof KIND_ARBS, seed: number): string[] {
  const values = fc.sample(KIND_ARBS[kind], { numRuns: PER_KIND, seed });
  const others = fc.sample(fc.oneof(...Object.values(KIND_ARBS)), { numRuns: PER_KIND, seed: seed + 1 });
  return values.map((v, i) => (i % 3 === 0 ? v : i % 3 === 1 ? `note: ${v}, thanks` : `${v} 123 and ${others[i]} 24/7`));
}

function current(inputs: Golden): Golden {
  const out: Golden = {};
  for (const [kind, pairs] of Object.entries(inputs)) {
    const texts = pairs.map(([input]) => input);
    const pseudonyms = notesOf('Pseudonymise', texts);
    out[kind] = texts.map((t, i) => [t, pseudonyms[i]]);
  }
  return out;
}

describe('pseudonyms of detected values (golden)', () => {
  if (process.env.DPG_WRITE_GOLDEN === '1') {
    const fresh: Golden = {};
    Object.keys(KIND_ARBS).forEach((kind, k) => {
      fresh[kind] = inputsOf(kind as keyof typeof KIND_ARBS, 1700 + k).map((t) => [t, '']);
    });
    writeFileSync(FILE, `${JSON.stringify(current(fresh), null, 0).replace(/\],\[/g, '],\n[')}\n`);
  }
  const golden = JSON.parse(readFileSync(FILE, 'utf8')) as Golden;

  it('are byte for byte the pinned ones, every kind, and reverse to the input', () => {
    const now = current(golden);
    for (const [kind, pairs] of Object.entries(golden)) {
      assert.equal(pairs.length, PER_KIND, kind);
      const changed = pairs.filter(([, out], i) => now[kind][i][1] !== out);
      assert.deepEqual(changed.slice(0, 5).map(([input, out]) => ({ input, pinned: out, now: now[kind].find(([i]) => i === input)?.[1] })), [], `${kind}: ${changed.length} of ${pairs.length} pseudonyms changed`);
      assert.ok(pairs.filter(([input, out]) => input !== out).length >= PER_KIND * 0.8, `${kind}: the values went through detection (::1 stays itself)`);
      assert.deepEqual(notesOf('Reconstruct', pairs.map(([, out]) => out)), pairs.map(([input]) => input), kind);
    }
  });
});
