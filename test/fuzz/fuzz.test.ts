// The short fuzz run inside `npm test`: every target (test/fuzz/targets) with a few generated
// inputs and its regression fixtures; inputs of known open classes replay as `todo`. The long run
// (a million inputs per target) is `npm run fuzz` (docs/reliability.md "Fuzzing").

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fixturesOf, KnownIssue, runTarget } from './harness.ts';
import { TARGETS } from './targets/index.ts';

/** Inputs per target of cost 1; a target of cost c gets SHORT_RUNS / c. */
const SHORT_RUNS = 150;

describe('fuzz, short run', () => {
  for (const target of TARGETS) {
    it(`${target.name}: fixtures and ${Math.round(SHORT_RUNS / (target.cost ?? 1))} generated inputs keep every invariant`, () => {
      const report = runTarget(target, { runs: Math.max(10, Math.round(SHORT_RUNS / (target.cost ?? 1))), seed: 19, batch: 1_000_000 });
      assert.equal(report.failures, 0, `${report.counterexamples?.[0]}\n${report.errors?.[0]}`);
    });
    for (const input of fixturesOf(`${target.name}.known`)) {
      it(`${target.name}: known open failure ${JSON.stringify(input).slice(0, 60)}`, { todo: 'reported in docs/reliability.md "Fuzzing", not fixed yet' }, () => {
        try {
          target.check(input);
        } catch (err) {
          if (err instanceof KnownIssue) assert.fail(err.label);
          throw err;
        }
      });
    }
  }
});
