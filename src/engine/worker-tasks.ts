// What a protection worker can be asked to do, and how it does it (protect-worker.ts runs these).
// Heavy bodies arrive as raw bytes moved (transferred, not copied) from the event loop — for
// /api/protect as the very chunks the socket delivered, joined here: joining, decoding, parsing,
// protecting and writing the answer all happen here, and the answer's bytes are moved back, so the
// event loop's share of a heavy request is reading the body and writing the answer. Each task
// calls the same function the event loop calls for a light request: results are the same bytes.

import type { DataSetType, JobSpec, ProtectSummary } from '../core/types.ts';
import { protectDocumentBody } from '../proxy/exchange/body-document.ts';
import { openEnvelope, type EnvelopeHeaders } from '../transport/http/protect-envelope.ts';
import type { ProtectionEngine } from './engine.ts';
import type { CellType } from './types.ts';
import { runGrpcMessageTask, type GrpcMessageTask } from '../proxy/grpc-egress/worker-message.ts';

export type WorkerTask =
  /** A document already decoded to text (or a parsed JSON value). */
  | { readonly kind: 'document'; readonly job: JobSpec; readonly dataSet: unknown }
  /** A gRPC table. */
  | { readonly kind: 'rows'; readonly job: JobSpec; readonly labels: readonly string[]; readonly rows: readonly (readonly string[])[]; readonly cellType: CellType }
  /** A routed proxy body (forward, reverse, transparent), as received once content codings are undone. */
  | { readonly kind: 'body'; readonly job: JobSpec; readonly bytes: Uint8Array; readonly contentType: string | undefined; readonly type: DataSetType }
  /** An XML or SQL document for /file/protect, as read: protected and flattened into CSV. */
  | { readonly kind: 'csv'; readonly job: JobSpec; readonly bytes: Uint8Array }
  /** A POST /api/protect body; the worker asks the event loop (onAsk) whether the client may run the job it names. */
  | { readonly kind: 'envelope'; readonly bytes: TaskBytes; readonly headers: EnvelopeHeaders }
  /** One message of a routed gRPC call (grpc-egress/worker-message.ts). */
  | GrpcMessageTask;

/**
 * A body for a task: one buffer, or the chunks it arrived in, in order (joined in the worker, so the
 * event loop never allocates and copies the whole body).
 */
export type TaskBytes = Uint8Array | readonly Uint8Array[];

/** What the 'body' and 'envelope' tasks answer: the bytes to send, and the summary. */
export interface BytesResult {
  readonly bytes: Uint8Array;
  readonly summary: ProtectSummary;
}

export interface TaskOutcome {
  readonly value: unknown;
  /** Moved back rather than copied. */
  readonly transfer: ArrayBuffer[];
}

export async function runTask(engine: ProtectionEngine, task: WorkerTask, ask: (question: unknown) => Promise<unknown>): Promise<TaskOutcome> {
  switch (task.kind) {
    case 'document':
      return { value: engine.protectDocument(task.job, task.dataSet), transfer: [] };
    case 'rows':
      return { value: engine.protectRows(task.job, task.labels, task.rows, task.cellType), transfer: [] };
    case 'body': {
      const out = protectDocumentBody(engine, task.job, asBuffer(task.bytes), task.contentType, task.type);
      return bytesOutcome(out.body, out.summary);
    }
    case 'csv': {
      const out = engine.documentToCsv(task.job, task.bytes);
      return bytesOutcome(out.bytes, out.summary);
    }
    case 'envelope': {
      const envelope = openEnvelope(joinTaskBytes(task.bytes), task.headers);
      await ask(envelope.job);
      const out = envelope.protect(engine);
      return bytesOutcome(out.payload, out.summary);
    }
    case 'grpc-message': {
      const value = runGrpcMessageTask((job) => engine.prepare(job), task);
      return { value, transfer: 'bytes' in value && value.bytes !== undefined ? transferOf(value.bytes) : [] };
    }
  }
}

/** A Buffer over the same memory (a structured clone delivers a plain Uint8Array). */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The body as one Buffer: the chunks joined (in a worker), or the one buffer as it is. */
export function joinTaskBytes(bytes: TaskBytes): Buffer {
  if (!Array.isArray(bytes)) return asBuffer(bytes as Uint8Array);
  const chunks = bytes as readonly Uint8Array[];
  return chunks.length === 1 ? asBuffer(chunks[0]!) : Buffer.concat(chunks as Uint8Array[]);
}

/**
 * The ArrayBuffers to move with `chunks`: each chunk's own, when the chunk is all of it (as every
 * chunk node:http hands over is), each once; a chunk sharing its memory is copied instead.
 */
export function transferOfAll(chunks: readonly Uint8Array[]): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>();
  for (const chunk of chunks) for (const buffer of transferOf(chunk)) out.add(buffer);
  return [...out];
}

/**
 * The ArrayBuffer to move with `bytes`, when `bytes` is all of it; else none (a slice of Node's
 * shared pool for a small buffer is copied instead: moving it would take its neighbours along).
 */
export function transferOf(bytes: Uint8Array): ArrayBuffer[] {
  const buffer = bytes.buffer;
  return buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === buffer.byteLength ? [buffer] : [];
}

function bytesOutcome(bytes: Buffer, summary: ProtectSummary): TaskOutcome {
  const value: BytesResult = { bytes, summary };
  return { value, transfer: transferOf(bytes) };
}
