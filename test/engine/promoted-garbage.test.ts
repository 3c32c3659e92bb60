// A request's binding must die young. An object literal with a getter per detected kind (bind.ts,
// before LazyKind) survived young-generation collections, so every request's binding was promoted
// and left for full collections: 3-5 ms scavenges and a proxy p99 6-12 ms worse with the `customer`
// manifest. This checks the cause, not the timing: after many requests, what a minor GC leaves in
// the heap above what a full GC leaves (promoted garbage) stays small.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { oneKilobyteJson } from '../../bench/open-loop.ts';
import { job, testEngine } from '../helpers/engine.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as (options?: { type: 'minor' | 'major' }) => void;

test('Mask with detection by content (customer) leaves no promoted garbage per request', () => {
  const engine = testEngine();
  const doc = oneKilobyteJson();
  const mask = job('customer', 'Mask');
  for (let i = 0; i < 2_000; i++) engine.protectDocument(mask, doc);
  gc();
  for (let i = 0; i < 20_000; i++) engine.protectDocument(mask, doc);
  gc({ type: 'minor' });
  const afterMinor = process.memoryUsage().heapUsed;
  gc();
  const promoted = afterMinor - process.memoryUsage().heapUsed;
  // 20,000 requests promoted ~43 MB before the fix, ~1 MB after.
  assert.ok(promoted < 12e6, `${(promoted / 1e6).toFixed(1)} MB of promoted garbage after 20,000 requests`);
});
