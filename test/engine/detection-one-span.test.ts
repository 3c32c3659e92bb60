// The paths a text holding one detected value takes (issue 17, allocation work): a short note whose
// check window is the whole text (the checked text becomes the output), a value with more than the
// window's 96 characters of prose on a side (checked in its window, then the whole output read
// again), a batch of texts (first steps taken for the batch) and a lone text (stepped on the spot).
// All must give the same pseudonym for the same value among plain prose, and Reconstruct must give
// every text back exactly.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { job, testEngine } from '../helpers/engine.ts';
import { valueArb } from '../helpers/detected-values.ts';

const engine = testEngine();
const PROSE = 'the customer asked us to update the delivery address before friday and to call back later ';

// JSON text, as requests carry it: the walker hands its strings over in batches (one here: alone).
const protect = (jobType: 'Pseudonymise' | 'Reconstruct', notes: readonly string[]): string[] =>
  (JSON.parse(engine.protectDocument(job('customer', jobType), JSON.stringify({ notes })).dataSet as string) as { notes: string[] }).notes;
const protectOne = (jobType: 'Pseudonymise' | 'Reconstruct', note: string): string =>
  (JSON.parse(engine.protectDocument(job('customer', jobType), JSON.stringify({ note })).dataSet as string) as { note: string }).note;

describe('a text holding one detected value', () => {
  it('short note, long prose either side, batch or alone: the same pseudonym, and Reconstruct gives the text back (300 values)', () => {
    const values = fc.sample(valueArb, { numRuns: 300, seed: 1717 });
    const long = PROSE.repeat(2);
    const shapes = (v: string) => [`note: ${v} thanks`, `${long}${v} ${long}`, `${long}${v}.`, `${v} ${long}`];
    const texts = values.flatMap(shapes);
    const batch = protect('Pseudonymise', texts);
    let changed = 0;
    values.forEach((v, i) => {
      const outs = batch.slice(4 * i, 4 * i + 4);
      // The pseudonym sits where the value was, between the same prose.
      const pseudonyms = outs.map((out, k) => {
        const [before, after] = shapes('\u0000')[k].split('\u0000');
        assert.ok(out.startsWith(before) && out.endsWith(after), `shape ${k} kept its prose`);
        return out.slice(before.length, out.length - after.length);
      });
      assert.equal(new Set(pseudonyms).size, 1, `one pseudonym for value ${i} in every shape`);
      if (pseudonyms[0] !== v) changed++;
      // Alone (no batch: the first step taken on the spot), the same output.
      assert.equal(protectOne('Pseudonymise', texts[4 * i + 1]), outs[1]);
    });
    assert.ok(changed >= 240, `${changed} of 300 values changed (::1-like IPv6 addresses stay)`);
    assert.deepEqual(protect('Reconstruct', batch), texts);
    assert.equal(protectOne('Reconstruct', batch[1]), texts[1]);
  });
});
