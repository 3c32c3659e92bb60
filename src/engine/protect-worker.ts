// A protection worker's entry (worker-pool.ts starts it; scripts/build.mjs emits it as
// dist/protect-worker.js). It builds an engine from the seed it is given and runs one task at a time
// (worker-tasks.ts), answering with the result or the error's catalogue code and detail.

import { parentPort, workerData } from 'node:worker_threads';
import { DpgError, toDpgError } from '../core/errors.ts';
import { engineFromSeed, type WorkerSeed } from './worker-seed.ts';
import type { WorkerAnswer, WorkerReply } from './worker-pool.ts';
import { joinTaskBytes, runTask, type WorkerTask } from './worker-tasks.ts';
import { takeNews } from './tally.ts';
import { lowerWorkerThread } from './worker-priority.ts';

// Before the manifests are compiled (most of a worker's start): the event loop wins a contended core.
lowerWorkerThread((workerData as WorkerSeed).nice);
const engine = engineFromSeed(workerData as WorkerSeed);
// Tests only (NODE_ENV=test and DPG_TEST_WORKER_FAULT set): a marker in the data makes this worker
// crash or hang, so the pool's fail-closed paths can be driven through a real gateway.
const faults = process.env.NODE_ENV === 'test' && process.env.DPG_TEST_WORKER_FAULT === '1';

/** The running task's open question, if any: the main thread's answer settles it. */
let waiting: { resolve(answer: unknown): void; reject(err: unknown): void } | undefined;

parentPort!.on('message', (message: ({ readonly id: number } & WorkerTask) | WorkerAnswer) => {
  if ('answer' in message || 'abort' in message) {
    const w = waiting;
    waiting = undefined;
    if ('abort' in message) w?.reject(new DpgError('INTERNAL', 'Stopped by the main thread'));
    else w?.resolve(message.answer);
    return;
  }
  void run(message);
});
// The engine is built: the pool starts the task's time budget afresh from here.
parentPort!.postMessage({ ready: true });

async function run(task: { readonly id: number } & WorkerTask): Promise<void> {
  const ask = (question: unknown): Promise<unknown> =>
    new Promise((resolve, reject) => {
      waiting = { resolve, reject };
      parentPort!.postMessage({ id: task.id, ask: question } satisfies WorkerReply);
    });
  let reply: WorkerReply;
  let transfer: ArrayBuffer[] = [];
  try {
    if (faults) injectFault(task);
    const outcome = await runTask(engine, task, ask);
    // What this task counted for the metrics rides along (tally.ts); a failed task counts nothing.
    const tally = takeNews();
    reply = { id: task.id, ok: true, value: outcome.value, ...(tally ? { tally } : {}) };
    transfer = outcome.transfer;
  } catch (err) {
    takeNews();
    // Only our own errors keep their detail (toDpgError): a foreign message may quote payload data.
    const e = toDpgError(err);
    const causeName = e === err ? undefined : err instanceof Error ? err.name : typeof err;
    const errorName = e === err && e.name !== 'DpgError' ? e.name : undefined;
    reply = {
      id: task.id,
      ok: false,
      code: e.code,
      detail: e.message,
      ...(e.errors ? { errors: e.errors } : {}),
      ...(causeName ? { causeName } : {}),
      ...(errorName ? { errorName } : {}),
    };
  }
  parentPort!.postMessage(reply, transfer);
}

function injectFault(task: WorkerTask): void {
  const text =
    task.kind === 'document' ? String(task.dataSet) : task.kind === 'rows' ? task.rows.flat().join('\n') : joinTaskBytes(task.bytes).toString('latin1');
  if (text.includes('dpg-test-worker-crash')) process.exit(70);
  if (text.includes('dpg-test-worker-hang')) for (;;);
}
