// The protection engine: the one place every door calls. Holds the compiled manifests (swapped
// atomically on reload) and the key service; runs a job over a payload through the data type's codec.

import type { Readable } from 'node:stream';
import { ConfigError, DpgError, type ConfigProblem } from '../core/errors.ts';
import { safeName } from '../core/safe-name.ts';
import type { Logger } from '../core/logger.ts';
import type { JobSpec, ProtectSummary, Scalar } from '../core/types.ts';
import type { Keyring } from '../crypto/keyring.ts';
import type { CompiledManifest } from '../manifest/compile.ts';
import { loadManifestDir, type ManifestSource } from '../manifest/load.ts';
import type { WorkersConfig } from '../config/types.ts';
import { documentCost, rowsCost } from './offload-cost.ts';
import { WorkerPool, type RunOptions } from './worker-pool.ts';
import type { WorkerTask } from './worker-tasks.ts';
import { keyringDocument, type WorkerSeed } from './worker-seed.ts';
import { bindJob } from './bind.ts';
import { KeyService } from './keys.ts';
import { createCodecs, type Codecs } from '../formats/registry.ts';
import { protectJsonText } from '../formats/json/protect-text.ts';
import { protectToCsv } from './csv-output.ts';
import { flatTableToCsv } from '../formats/list/csv-writer.ts';
import type { CellType, DocumentResult, Engine, PreparedJob, RowsResult } from './types.ts';

export interface EngineLimits {
  readonly maxDepth: number;
  readonly maxValueLength: number;
  readonly maxRows: number;
  /** Documents held whole for CSV output (XML, SQL). */
  readonly maxDocumentBytes: number;
  /** Absent or max 0: the async methods run inline too (no workers). */
  readonly workers?: WorkersConfig;
}

export interface EngineOptions {
  readonly manifestsDir: string;
  readonly keyring: Keyring;
  readonly limits?: Partial<EngineLimits>;
  readonly logger?: Logger;
  /** Clock for default snapshot dates (tests pin it). */
  readonly now?: () => Date;
}

const DEFAULT_LIMITS: EngineLimits = { maxDepth: 256, maxValueLength: 1024 * 1024, maxRows: 1_000_000, maxDocumentBytes: 64 * 1024 * 1024 };

export class ProtectionEngine implements Engine {
  private manifests: ReadonlyMap<string, CompiledManifest>;
  /** The texts `manifests` came from, swapped with them: a worker compiles the same set. */
  private sources: readonly ManifestSource[];
  /** Started on the first heavy document; replaced (the old one drains) when manifests reload. */
  private pool: WorkerPool | undefined;
  private readonly keys: KeyService;
  private readonly limits: EngineLimits;
  private readonly codecs: Codecs;
  private readonly now: () => Date;

  constructor(
    private readonly options: EngineOptions,
    manifests: ReadonlyMap<string, CompiledManifest>,
    sources: readonly ManifestSource[] = [],
  ) {
    this.manifests = manifests;
    this.sources = sources;
    this.keys = new KeyService(options.keyring);
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.codecs = createCodecs({ maxDepth: this.limits.maxDepth });
    this.now = options.now ?? (() => new Date());
  }

  /**
   * Re-reads the manifest directory. On any problem the current plans stay in force and the
   * problems are returned; otherwise the new set replaces the old one in a single assignment.
   */
  reload(): readonly ConfigProblem[] {
    const { manifests, sources, problems } = loadChecked(this.options);
    if (problems.length === 0) {
      this.manifests = manifests;
      this.sources = sources;
      // Workers hold the old plans: new work goes to a new pool, the old one finishes what it has.
      this.pool?.close();
      this.pool = undefined;
    }
    return problems;
  }

  manifest(name: string): CompiledManifest | undefined {
    return this.manifests.get(name);
  }

  hasManifest(name: string): boolean {
    return this.manifests.has(name);
  }

  manifestNames(): string[] {
    return [...this.manifests.keys()].sort();
  }

  prepare(job: JobSpec): PreparedJob {
    const manifest = this.manifests.get(job.manifestName);
    if (!manifest) throw new DpgError('MANIFEST_NOT_FOUND', 'No manifest has the requested name');
    return bindJob(manifest, job, { keys: this.keys, limits: this.limits, now: this.now });
  }

  protectDocument(job: JobSpec, dataSet: unknown): DocumentResult {
    const prepared = this.prepare(job);
    const codec = this.codecs.documents[job.dataSetType];
    if (typeof dataSet !== 'string' && job.dataSetType !== 'JSON') {
      throw new DpgError('INVALID_REQUEST', `A ${job.dataSetType} data set must be text`);
    }
    const { sqlDialect, listDelimiter, listRequireCertainDelimiter } = job.context;
    const out = codec.protect(dataSet, prepared.resolver, { sqlDialect, listDelimiter, listRequireCertainDelimiter });
    return { dataSet: out, summary: prepared.finish() };
  }

  /**
   * protectDocument off the event loop when the document is heavy (offload-cost.ts above
   * limits.workers.inlineBytes): same result, byte for byte; otherwise inline, with no message passing.
   */
  async protectDocumentAsync(job: JobSpec, dataSet: unknown): Promise<DocumentResult> {
    const pool = this.poolFor(documentCost(job.dataSetType, dataSet));
    if (!pool) return this.protectDocument(job, dataSet);
    return (await pool.run({ kind: 'document', job, dataSet } satisfies WorkerTask)) as DocumentResult;
  }

  /** protectRows, off the event loop for a heavy table (its cells' characters above inlineBytes). */
  async protectRowsAsync(job: JobSpec, labels: readonly string[], rows: readonly (readonly string[])[], cellType: CellType): Promise<RowsResult> {
    const pool = rows.length > this.limits.maxRows ? undefined : this.poolFor(rowsCost(rows));
    if (!pool) return this.protectRows(job, labels, rows, cellType);
    return (await pool.run({ kind: 'rows', job, labels, rows, cellType } satisfies WorkerTask)) as RowsResult;
  }

  /**
   * Runs `task` in a protection worker when `cost` (offload-cost.ts) is above
   * limits.workers.inlineBytes; undefined when it is light or workers are off: the caller then runs
   * the same work inline, with no message passing. A worker failure rejects with WORKER_FAILED.
   */
  offload(cost: number, task: WorkerTask, options?: RunOptions): Promise<unknown> | undefined {
    return this.poolFor(cost)?.run(task, options);
  }

  /** Workers alive now and started so far (tests, docs/operations.md). */
  workerStats(): { alive: number; started: number } {
    return { alive: this.pool?.size ?? 0, started: this.pool?.started ?? 0 };
  }

  /** Stops the workers (gateway shutdown); a later heavy document would start new ones. */
  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    await pool?.terminate();
  }

  private poolFor(cost: number): WorkerPool | undefined {
    const w = this.limits.workers;
    if (!w || w.max <= 0 || cost <= w.inlineBytes) return undefined;
    return (this.pool ??= new WorkerPool({
      max: w.max,
      timeoutMs: w.timeoutMs,
      idleMs: w.idleMs,
      ...(w.nice ? { nice: w.nice } : {}),
      workerData: this.seed(),
      ...(this.options.logger ? { logger: this.options.logger } : {}),
    }));
  }

  private seed(): WorkerSeed {
    const nice = this.limits.workers?.nice;
    return { manifestsDir: this.options.manifestsDir, sources: this.sources, keyring: keyringDocument(this.options.keyring), limits: this.limits, ...(nice ? { nice } : {}) };
  }

  protectRows(job: JobSpec, labels: readonly string[], rows: readonly (readonly string[])[], cellType: CellType): RowsResult {
    if (rows.length > this.limits.maxRows) {
      throw new DpgError('PAYLOAD_TOO_LARGE', `At most ${this.limits.maxRows} rows per request`);
    }
    for (let r = 0; r < rows.length; r++) {
      if (rows[r]!.length !== labels.length) {
        throw new DpgError('INVALID_REQUEST', `Row ${r} has ${rows[r]!.length} columns but there are ${labels.length} labels`);
      }
    }
    const prepared = this.prepare(job);
    const out = rows.map((row) => row.slice());
    const standIn = job.context.useRestrictedText ? (job.context.restrictedText ?? '') : '';
    // Labels are matched like LIST headers: surrounding spaces do not hide a column from its rule.
    const actions = labels.map((label) => prepared.resolver.resolve(label.trim(), label.trim()));
    if (cellType === 'JSON') {
      for (let c = 0; c < labels.length; c++) {
        const action = actions[c];
        for (let r = 0; r < out.length; r++) {
          const cell = out[r]![c]!;
          if (cell === '') continue; // an unset cell holds no document
          // A tabular cell cannot be deleted: Restrict leaves the stand-in text in its place.
          if (action?.removes(cell, () => `row ${r}, column ${safeName(labels[c]!.trim())}`)) {
            out[r]![c] = standIn;
            continue;
          }
          // Each cell is a JSON document; its fields are matched by the manifest's rules, and a
          // label with a rule of its own covers the whole document, as a matched key would. Like
          // every JSON door, the cell keeps every byte but its protected values.
          out[r]![c] = protectJsonText(cell, prepared.resolver, this.limits, action, `Row ${r}, column ${safeName(labels[c]!.trim())}: JSON`);
        }
      }
    } else {
      const column: Scalar[] = new Array(out.length);
      for (let c = 0; c < labels.length; c++) {
        const label = labels[c]!;
        const action = actions[c];
        if (!action) continue;
        for (let r = 0; r < out.length; r++) column[r] = out[r]![c]!;
        // A tabular cell cannot be deleted: Restrict leaves the stand-in text in its place.
        // Removed: Restrict, or a label that is itself personal data (docs/detection.md).
        if (action.removes('x', () => `row 0, column ${safeName(label.trim())}`)) {
          const keepEmpty = !job.context.protectNullValues;
          for (let r = 0; r < out.length; r++) out[r]![c] = keepEmpty && column[r] === '' ? '' : standIn;
          continue;
        }
        const shown = safeName(label.trim());
        const protectedColumn = action.applyBatch(column, (r) => `row ${r}, column ${shown}`);
        for (let r = 0; r < out.length; r++) out[r]![c] = scalarToCell(protectedColumn[r]!);
      }
    }
    return { rows: out, summary: prepared.finish() };
  }

  /**
   * /file/protect's answer for an XML or SQL document held whole: its bytes (UTF-8) protected and
   * flattened into CSV, in one piece. The bytes protectToCsv streams for the same document; a
   * protection worker runs this for a heavy one.
   */
  documentToCsv(job: JobSpec, bytes: Uint8Array): { bytes: Buffer; summary: ProtectSummary } {
    const type = job.dataSetType;
    if (type !== 'XML' && type !== 'SQL') throw new DpgError('INVALID_REQUEST', `A ${type} file is not flattened whole`);
    const prepared = this.prepare(job);
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
    const options = { sqlDialect: job.context.sqlDialect };
    const protectedText = this.codecs.documents[type].protect(text, prepared.resolver, options);
    const summary = prepared.finish();
    const table = this.codecs.flatteners[type](protectedText, options);
    return { bytes: Buffer.from(flatTableToCsv(table), 'utf8'), summary };
  }

  protectToCsv(job: JobSpec, input: Readable): { output: Readable; summary: Promise<ProtectSummary> } {
    return protectToCsv(this, this.codecs, this.limits, job, input);
  }
}

function scalarToCell(v: Scalar): string {
  return v === null ? '' : typeof v === 'string' ? v : String(v);
}

/** Loads manifests and builds the engine; throws ConfigError listing every manifest problem. */
export function createEngine(options: EngineOptions): ProtectionEngine {
  const { manifests, sources, problems } = loadChecked(options);
  if (problems.length > 0) throw new ConfigError(problems);
  return new ProtectionEngine(options, manifests, sources);
}

/** Loads the manifest directory and checks what needs the keyring too: every keyId must exist. */
function loadChecked(options: EngineOptions): { manifests: ReadonlyMap<string, CompiledManifest>; sources: readonly ManifestSource[]; problems: ConfigProblem[] } {
  const { manifests, sources, problems } = loadManifestDir(options.manifestsDir);
  const kids = new Set(options.keyring.kids());
  const all = [...problems];
  for (const m of manifests.values()) {
    if (m.keyId !== undefined && !kids.has(m.keyId)) all.push({ file: m.file, path: 'keyId', message: `key ${m.keyId} is not in the keyring` });
  }
  return { manifests, sources, problems: all };
}
