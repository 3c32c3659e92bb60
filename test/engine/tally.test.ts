// The metrics' counts of what protection did (engine/tally.ts): values by job type and technique,
// detected values by kind. Counted once per successful request, on the event loop and in workers
// alike (a worker sends its counts with its answer), and nothing for a request that failed.

import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureDevKeyring, loadKeyringFile } from '../../src/crypto/keyring.ts';
import { createEngine } from '../../src/engine/engine.ts';
import { readTally } from '../../src/engine/tally.ts';
import { workerPoolStats } from '../../src/engine/worker-pool.ts';
import { Metrics } from '../../src/core/metrics.ts';
import type { JobSpec } from '../../src/core/types.ts';

const MANIFESTS = fileURLToPath(new URL('../../config/manifests', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'dpg-tally-'));
const keyring = loadKeyringFile(ensureDevKeyring(dir));
const workers = { max: 1, inlineBytes: 0, timeoutMs: 60_000, idleMs: 60_000 };
const inline = createEngine({ manifestsDir: MANIFESTS, keyring, limits: { workers: { ...workers, max: 0 } } });
const offloaded = createEngine({ manifestsDir: MANIFESTS, keyring, limits: { workers } });
after(async () => {
  await offloaded.close();
  rmSync(dir, { recursive: true, force: true });
});

const job = (jobType: string, silentMode = false): JobSpec =>
  ({ manifestName: 'customer', jobType, dataSetType: 'JSON', context: { requestId: 'r-1', silentMode } }) as unknown as JobSpec;

const technique = (jobType: string, id: string): number => readTally().techniques.find((t) => t.jobType === jobType && t.technique === id)?.count ?? 0;
const detected = (jobType: string, kind: string): number => readTally().detected.find((d) => d.jobType === jobType && d.kind === kind)?.count ?? 0;

const DOC = () => ({
  customers: [
    { name: 'Jane Doe', email: 'jane@example.com', cardNumber: '4111 1111 1111 1111', notes: 'call +1 415-555-0132 or mail j.doe@example.org' },
    { name: 'John Roe', email: 'john@example.com', cardNumber: '5555 5555 5555 4444', notes: 'card 4111111111111111' },
  ],
});

describe('the engine tally', () => {
  it('counts values by technique and detected values by kind on the event loop, once per request', () => {
    const mask = (id: string) => technique('Mask', id);
    const before = { initials: mask('mask-initials'), email: mask('mask-email'), phone: detected('Mask', 'phone'), email2: detected('Mask', 'email'), card: detected('Mask', 'card') };
    const out = inline.protectDocument(job('Mask'), DOC());
    assert.equal(out.summary.protected, 9);
    assert.equal(mask('mask-initials') - before.initials, 2, 'two names');
    assert.equal(mask('mask-email') - before.email, 3, 'two email fields and one email found in notes');
    assert.equal(detected('Mask', 'phone') - before.phone, 1);
    assert.equal(detected('Mask', 'email') - before.email2, 1);
    assert.equal(detected('Mask', 'card') - before.card, 1);
  });

  it('counts a text whose readings were merged and protected again once per final value', () => {
    // Two phone readings sharing a digit group are protected, scanned again and merged: a span protected in
    // an earlier round or under several kinds still counts once, like the request's summary.
    const sum = (): number => readTally().detected.filter((d) => d.jobType === 'Mask').reduce((a, d) => a + d.count, 0);
    const before = sum();
    const out = inline.protectDocument(job('Mask'), { customers: [{ notes: 'call 415-555-0132 555 0199' }] });
    assert.ok(out.summary.protected > 0);
    assert.equal(sum() - before, out.summary.protected, JSON.stringify(readTally().detected));
  });

  it('counts nothing for a request that failed', () => {
    const before = JSON.stringify(readTally());
    // A Reconstruct of values that are no pseudonyms of these keys fails (not silent).
    assert.throws(() => inline.protectDocument(job('Decrypt'), { email: 'enc:v1:not-a-token' }));
    assert.equal(JSON.stringify(readTally()), before);
  });

  it('adds what a worker counted, sent back with its answer', async () => {
    const before = technique('Pseudonymise', 'fpe-name');
    const startedBefore = workerPoolStats().started;
    const tasksBefore = workerPoolStats().tasks;
    const text = JSON.stringify(DOC());
    const out = await offloaded.protectDocumentAsync(job('Pseudonymise'), text);
    assert.equal(out.summary.protected, 9, JSON.stringify(out.summary));
    assert.equal(technique('Pseudonymise', 'fpe-name') - before, 2, 'the worker thread counted the names; the main thread has them');
    assert.equal(workerPoolStats().started - startedBefore, 1);
    assert.equal(workerPoolStats().tasks - tasksBefore, 1);
    assert.deepEqual({ busy: workerPoolStats().busy, queued: workerPoolStats().queued }, { busy: 0, queued: 0 });
  });

  it('is what /metrics reports', async () => {
    const metrics = new Metrics({ collectDefaults: false });
    metrics.trackEngine({ tally: readTally, workers: workerPoolStats });
    const { body } = await metrics.render();
    const n = technique('Mask', 'mask-initials');
    assert.ok(n > 0);
    assert.match(body, new RegExp(`dpg_technique_values_total\\{job_type="Mask",technique="mask-initials"\\} ${n}\\n`));
    assert.match(body, new RegExp(`dpg_detected_values_total\\{job_type="Mask",kind="phone"\\} ${detected('Mask', 'phone')}\\n`));
    assert.match(body, /dpg_workers\{state="busy"\} 0\n/);
    assert.match(body, /dpg_worker_queued_tasks 0\n/);
    assert.match(body, /dpg_workers_started_total \d+\n/);
    assert.match(body, /dpg_worker_failures_total 0\n/);
    // Counts and names only.
    assert.doesNotMatch(body, /jane|example\.com|4111/);
  });
});
