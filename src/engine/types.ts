// What the doors (HTTP, gRPC, proxy, CLI) see of the protection engine.

import type { Readable } from 'node:stream';
import type { FieldResolver } from '../formats/codec.ts';
import type { JobSpec, ProtectSummary } from '../core/types.ts';
import type { RunOptions } from './worker-pool.ts';
import type { WorkerTask } from './worker-tasks.ts';

/**
 * One request's job, bound and ready: a resolver for codecs and the failure bookkeeping.
 * Obtained from Engine.prepare; throws MANIFEST_NOT_FOUND / JOB_TYPE_NOT_DEFINED / INVALID_REQUEST
 * before any data is read.
 */
export interface PreparedJob {
  readonly job: JobSpec;
  readonly resolver: FieldResolver;
  /**
   * Call once the data has been processed and before any output is released: returns the summary,
   * or throws VALUE_NOT_PROTECTABLE (with locations) when values failed and silent mode is off.
   */
  finish(): ProtectSummary;
  /**
   * Like finish(), for streams that have already released earlier output (LIST): throws as soon
   * as one value has failed outside silent mode, so a stream stops at the first failure.
   */
  check(): void;
}

export interface DocumentResult {
  /** Parsed JSON in → JSON value out; text in → text out. */
  readonly dataSet: unknown;
  readonly summary: ProtectSummary;
}

export interface RowsResult {
  readonly rows: string[][];
  readonly summary: ProtectSummary;
}

/** Cell type of gRPC tabular data (JobConfig.dataset_type). */
export type CellType = 'FILE' | 'JSON';

export interface Engine {
  prepare(job: JobSpec): PreparedJob;
  /** Whole documents in memory: JSON (text or parsed), XML, SQL, LIST (text). */
  protectDocument(job: JobSpec, dataSet: unknown): DocumentResult;
  /**
   * The same, for the doors: a heavy document (above limits.workers.inlineBytes, weighted by data
   * type) runs in a protection worker so the event loop stays free; a light one runs inline.
   * A worker that crashes or overruns its budget rejects with WORKER_FAILED (nothing was produced).
   */
  protectDocumentAsync(job: JobSpec, dataSet: unknown): Promise<DocumentResult>;
  /** gRPC ProtectValues: columns named by labels; FILE cells are values, JSON cells are documents. */
  protectRows(job: JobSpec, labels: readonly string[], rows: readonly (readonly string[])[], cellType: CellType): RowsResult;
  /**
   * A task of worker-tasks.ts in a protection worker when `cost` is above inlineBytes; undefined
   * when it is light (the caller runs the same work inline). Heavy bodies go as raw bytes.
   */
  offload(cost: number, task: WorkerTask, options?: RunOptions): Promise<unknown> | undefined;
  /** protectRows, in a protection worker for a heavy table (see protectDocumentAsync). */
  protectRowsAsync(job: JobSpec, labels: readonly string[], rows: readonly (readonly string[])[], cellType: CellType): Promise<RowsResult>;
  /**
   * /file/protect: protects the data and writes it as flattened CSV (LIST stays LIST). Streams
   * where the type allows. The summary promise settles when the output ends.
   */
  protectToCsv(job: JobSpec, input: Readable): { output: Readable; summary: Promise<ProtectSummary> };
  hasManifest(name: string): boolean;
  manifestNames(): string[];
}
