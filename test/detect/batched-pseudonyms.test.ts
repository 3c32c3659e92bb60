// Pseudonymise and Reconstruct of detected values run batched (issue 17, throughput): the JSON
// walker hands free-text strings over in batches, each kind's scheme steps all their values with
// one FF1 run (KindScheme.many) and the engine takes each value's first step from there. The step
// is a pure function of the value, so the output must be byte for byte what one-by-one stepping
// gives, and the cycle-walk steps counted must be the same. A one-element array is never batched
// (nothing to batch with): it is the one-by-one reference here.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { job, testEngine } from '../helpers/engine.ts';
import { valueArb } from '../helpers/detected-values.ts';
import { walkSteps } from '../../src/techniques/pseudonymise/detected/walk-steps.ts';

const engine = testEngine();
/** Through the JSON text walker (the one that batches), as documents arrive over HTTP. */
const notesOf = (jobType: 'Pseudonymise' | 'Reconstruct', notes: readonly string[]): string[] =>
  (JSON.parse(engine.protectDocument(job('customer', jobType), JSON.stringify({ notes })).dataSet as string) as { notes: string[] }).notes;

/** Texts of one or two values of every kind with neighbours, and some repeated (one memo entry, used twice). */
function texts(): string[] {
  const values = fc.sample(valueArb, { numRuns: 300, seed: 17 });
  const out: string[] = [];
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    out.push(i % 5 === 0 ? `${v} 123 and ${values[(i + 1) % values.length]}` : i % 7 === 0 ? v : `note: ${v}, thanks`);
  }
  return [...out, ...out.slice(0, 50)];
}

describe('detected values pseudonymised in batches', () => {
  const input = texts();

  it('give the same bytes and cycle-walk steps as one value at a time, both ways', () => {
    let before = walkSteps.count;
    const batched = notesOf('Pseudonymise', input);
    const batchedSteps = walkSteps.count - before;
    before = walkSteps.count;
    const alone = input.map((t) => notesOf('Pseudonymise', [t])[0]);
    const aloneSteps = walkSteps.count - before;
    assert.deepEqual(batched, alone);
    assert.equal(batchedSteps, aloneSteps);
    assert.ok(batched.filter((t, i) => t !== input[i]).length > input.length * 0.9, 'the texts went through detection');

    before = walkSteps.count;
    const back = notesOf('Reconstruct', batched);
    const backSteps = walkSteps.count - before;
    before = walkSteps.count;
    const backAlone = batched.map((t) => notesOf('Reconstruct', [t])[0]);
    assert.deepEqual(back, backAlone);
    assert.equal(backSteps, walkSteps.count - before);
    assert.deepEqual(back, input);
  });

  it('record failures at the same locations, in document order, around other fields', () => {
    // Mixed-case IPv6 addresses fail (IPV6_MIXED_CASE) among good values and fields with their own
    // rules: the summary lists the same failures, in the same order, batched or not.
    const silent = job('customer', 'Pseudonymise', { silentMode: true });
    const doc = { phone: '+44 20 7946 0958', notes: ['ip 2001:Db8::1 here', 'card 4111 1111 1111 1111', 'x 2001:Db8::2 y'], ssn: '123-45-6789' };
    const listed = (text: string) => engine.protectDocument(silent, text).summary.failures.map((f) => `${f.location} ${f.reason}`);
    const batched = listed(JSON.stringify(doc));
    const alone = doc.notes.flatMap((n, i) => listed(JSON.stringify({ ...doc, notes: [n] })).map((f) => f.replace('$.notes[0]', `$.notes[${i}]`)));
    assert.equal(batched.length, 2);
    assert.deepEqual(batched, alone);
  });
});
