// The engine the HTTP and gRPC doors hold across reloads. Each call is served whole by the
// generation in force when it starts (one request makes one protection call), and counts as a
// request of that generation until it settles, so a retired engine is closed only after it.

import type { Readable } from 'node:stream';
import type { JobSpec, ProtectSummary } from '../core/types.ts';
import type { CellType, DocumentResult, Engine, PreparedJob, RowsResult } from '../engine/types.ts';
import type { RunOptions } from '../engine/worker-pool.ts';
import type { WorkerTask } from '../engine/worker-tasks.ts';
import type { ConfigGeneration } from './generation.ts';

export class LiveEngine implements Engine {
  constructor(private readonly current: () => ConfigGeneration) {}

  prepare(job: JobSpec): PreparedJob {
    return this.current().engine.prepare(job);
  }

  protectDocument(job: JobSpec, dataSet: unknown): DocumentResult {
    return this.current().engine.protectDocument(job, dataSet);
  }

  protectDocumentAsync(job: JobSpec, dataSet: unknown): Promise<DocumentResult> {
    const g = this.current();
    const leave = g.enter();
    return settle(() => g.engine.protectDocumentAsync(job, dataSet), leave);
  }

  offload(cost: number, task: WorkerTask, options?: RunOptions): Promise<unknown> | undefined {
    const g = this.current();
    const leave = g.enter();
    let started: Promise<unknown> | undefined;
    try {
      started = g.engine.offload(cost, task, options);
    } catch (err) {
      leave();
      throw err;
    }
    // Light work (undefined) runs inline through the other calls, each under the generation in force.
    if (started === undefined) leave();
    else started.then(leave, leave);
    return started;
  }

  protectRows(job: JobSpec, labels: readonly string[], rows: readonly (readonly string[])[], cellType: CellType): RowsResult {
    return this.current().engine.protectRows(job, labels, rows, cellType);
  }

  protectRowsAsync(job: JobSpec, labels: readonly string[], rows: readonly (readonly string[])[], cellType: CellType): Promise<RowsResult> {
    const g = this.current();
    const leave = g.enter();
    return settle(() => g.engine.protectRowsAsync(job, labels, rows, cellType), leave);
  }

  protectToCsv(job: JobSpec, input: Readable): { output: Readable; summary: Promise<ProtectSummary> } {
    const g = this.current();
    const leave = g.enter();
    try {
      const started = g.engine.protectToCsv(job, input);
      started.summary.then(leave, leave);
      return started;
    } catch (err) {
      leave();
      throw err;
    }
  }

  hasManifest(name: string): boolean {
    return this.current().engine.hasManifest(name);
  }

  manifestNames(): string[] {
    return this.current().engine.manifestNames();
  }
}

/** Runs an async engine call and leaves the generation when it settles (or throws at once). */
function settle<T>(run: () => Promise<T>, leave: () => void): Promise<T> {
  try {
    const p = run();
    p.then(leave, leave);
    return p;
  } catch (err) {
    leave();
    return Promise.reject(err);
  }
}
