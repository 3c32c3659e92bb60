// Issue 18, head of line: the event loop wins a contended core. A protection worker's thread takes
// limits.workers.nice from the moment it exists; every other thread — the event loop, V8's helper
// threads and libuv's pool, which also do the event loop's own work — keeps its priority. Counted
// from /proc/self/task/<tid>/stat (field 19), which is per thread on Linux.

import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureDevKeyring, loadKeyringFile } from '../../src/crypto/keyring.ts';
import { createEngine } from '../../src/engine/engine.ts';
import type { JobSpec } from '../../src/core/types.ts';
import { lowerNewThreads, lowerWorkerThread, threadIds, threadNice } from '../../src/engine/worker-priority.ts';

const MANIFESTS = fileURLToPath(new URL('../../config/manifests', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'dpg-worker-priority-'));
const keyring = loadKeyringFile(ensureDevKeyring(dir));
after(() => rmSync(dir, { recursive: true, force: true }));

const job = { manifestName: 'customer', jobType: 'Mask', dataSetType: 'JSON', context: { requestId: 'r-1' } } as unknown as JobSpec;
const document = JSON.stringify({ customers: Array.from({ length: 50 }, (_, i) => ({ name: `Jane Doe${i}`, email: `jane${i}@example.com` })) });
const nices = (): Map<number, number> => new Map(readdirSync('/proc/self/task').map((t) => [Number(t), threadNice(t)]));
const linux = process.platform === 'linux';

describe('protection worker priority', () => {
  it('does nothing off Linux, where the call would lower the whole process', () => {
    assert.equal(lowerNewThreads(new Set(), 10, 'darwin'), 0);
    assert.deepEqual(threadIds('darwin'), new Set());
    assert.equal(lowerWorkerThread(10, 'win32'), false);
    assert.equal(lowerWorkerThread(10, 'linux'), false, 'never on the event loop');
  });

  it('with nice 0 lowers nothing', { skip: linux ? false : 'per-thread nice values are Linux only' }, () => {
    assert.equal(lowerNewThreads(new Set(), 0), 0);
    assert.deepEqual([...nices().values()].filter((n) => n !== 0), []);
  });

  it('lowers the worker thread to limits.workers.nice from its first instruction, and no other thread', { skip: linux ? false : 'per-thread nice values are Linux only' }, async () => {
    const engine = createEngine({ manifestsDir: MANIFESTS, keyring, limits: { workers: { max: 1, inlineBytes: 0, timeoutMs: 60_000, idleMs: 60_000, nice: 7 } } });
    const before = nices();
    // Read before this turn of the event loop ends: the worker's thread has just been created and
    // has not yet loaded its modules (the most CPU of its start), so its own call has not run.
    const running = engine.protectDocumentAsync(job, document);
    const atStart = nices();
    const started = [...atStart.keys()].filter((tid) => !before.has(tid));
    assert.ok(started.length >= 1, 'the worker thread exists once the task is handed over');
    assert.deepEqual(started.map((tid) => atStart.get(tid)), started.map(() => 7), 'lowered from its first instruction');
    const out = await running;
    assert.ok(!String(out.dataSet).includes('jane1@example.com'));
    assert.equal(engine.workerStats().alive, 1);
    const now = nices();
    assert.equal(now.get(process.pid), 0, 'the event loop keeps its priority');
    assert.equal(getPriority(0), 0);
    // V8's helper threads (the event loop's parallel scavenges wait for them) and libuv's pool keep theirs.
    assert.deepEqual([...before].filter(([tid, n]) => now.has(tid) && now.get(tid) !== n), [], 'no thread that existed before changed');
    await engine.close();
  });
});
