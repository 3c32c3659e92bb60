// A protection worker's entry (worker-pool.ts starts it; scripts/build.mjs emits it as
// dist/protect-worker.js). It builds an engine from the seed it is given and runs one task at a time:
// a document or a gRPC table, answering with the result or the error's catalogue code and detail.

import { parentPort, workerData } from 'node:worker_threads';
import { toDpgError } from '../core/errors.ts';
import type { JobSpec } from '../core/types.ts';
import type { CellType } from './types.ts';
import { engineFromSeed, type WorkerSeed } from './worker-seed.ts';
import type { WorkerReply } from './worker-pool.ts';

type Task =
  | { readonly id: number; readonly kind: 'document'; readonly job: JobSpec; readonly dataSet: unknown }
  | { readonly id: number; readonly kind: 'rows'; readonly job: JobSpec; readonly labels: string[]; readonly rows: string[][]; readonly cellType: CellType };

const engine = engineFromSeed(workerData as WorkerSeed);
// Tests only (NODE_ENV=test and DPG_TEST_WORKER_FAULT set): a marker in the data makes this worker
// crash or hang, so the pool's fail-closed paths can be driven through a real gateway.
const faults = process.env.NODE_ENV === 'test' && process.env.DPG_TEST_WORKER_FAULT === '1';

parentPort!.on('message', (task: Task) => {
  let reply: WorkerReply;
  try {
    if (faults) injectFault(task);
    const value =
      task.kind === 'document' ? engine.protectDocument(task.job, task.dataSet) : engine.protectRows(task.job, task.labels, task.rows, task.cellType);
    reply = { id: task.id, ok: true, value };
  } catch (err) {
    // Only our own errors keep their detail (toDpgError): a foreign message may quote payload data.
    const e = toDpgError(err);
    const causeName = e === err ? undefined : err instanceof Error ? err.name : typeof err;
    reply = { id: task.id, ok: false, code: e.code, detail: e.message, ...(e.errors ? { errors: e.errors } : {}), ...(causeName ? { causeName } : {}) };
  }
  parentPort!.postMessage(reply);
});
// The engine is built: the pool starts the task's time budget afresh from here.
parentPort!.postMessage({ ready: true });

function injectFault(task: Task): void {
  const text = task.kind === 'document' ? String(task.dataSet) : task.rows.flat().join('\n');
  if (text.includes('dpg-test-worker-crash')) process.exit(70);
  if (text.includes('dpg-test-worker-hang')) for (;;);
}
