// Protecting a 1 MB JSON document (10% of its values masked) next to JSON.parse + JSON.stringify of
// the same text, the do-nothing limit of any parse-protect-serialise design. Goal: >= 0.5x.

import { testEngine, job } from '../test/helpers/engine.ts';
import { oneMegabyteJsonDocument } from './documents.ts';
import { timeLoop } from './timing.ts';

const engine = testEngine();
const spec = job('card-masking', 'Mask');

const text = oneMegabyteJsonDocument();
const mb = text.length / 1e6;
console.log(`document: ${mb.toFixed(2)} MB, ${JSON.parse(text).records.length} records, 10% of values masked`);
const baselineFn = () => JSON.stringify(JSON.parse(text));
const oursFn = () => engine.protectDocument(spec, text);
for (let i = 0; i < 20; i++) {
  baselineFn();
  oursFn();
}
// Alternate short rounds and keep the best of each, so drift on a shared machine hits both alike.
let baseline = 0;
let ours = 0;
for (let round = 0; round < 6; round++) {
  baseline = Math.max(baseline, timeLoop(baselineFn, 700).perSecond);
  ours = Math.max(ours, timeLoop(oursFn, 700).perSecond);
}
console.log(`${'baseline JSON.parse + JSON.stringify'.padEnd(44)} ${baseline.toFixed(1).padStart(8)} docs/s`);
console.log(`${'dpg protect (Mask, card-masking)'.padEnd(44)} ${ours.toFixed(1).padStart(8)} docs/s`);
console.log(`ratio: ${(ours / baseline).toFixed(2)}x of baseline (goal >= 0.5x); ${(ours * mb).toFixed(1)} MB/s`);
