// A bounded pool of protection workers (node:worker_threads), so one heavy document never holds the
// event loop every door shares. Why our own and not piscina: the pool needs four things — lazy start,
// reaping when idle, a per-task time budget that kills and replaces the worker, and fail-closed
// errors from the catalogue — in ~150 lines; piscina brings its own queueing, histograms and
// AbortSignal plumbing we would have to wrap to get the same errors, and one more bundled library.
//
// A task goes to an idle worker, else to a new one while fewer than `max` run, else waits in line.
// A worker that crashes or overruns its budget fails its task with WORKER_FAILED and is gone; the
// next task starts a fresh one. Workers are unref'd while idle: they never keep a process alive.

import { Worker } from 'node:worker_threads';
import { DpgError, type ValueFailure } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import type { ErrorCode } from '../core/errors.ts';
import { addNews, type TallyNews } from './tally.ts';
import { lowerNewThreads, threadIds } from './worker-priority.ts';

/** What a worker's start may take, whatever the task budget: loading and compiling on a busy machine. */
const START_BUDGET_MS = 30_000;

export interface WorkerPoolOptions {
  /** Most workers at once (≥ 1). */
  readonly max: number;
  /** A task running longer fails with WORKER_FAILED; its worker is terminated. */
  readonly timeoutMs: number;
  /** An idle worker is terminated after this long (0: as soon as it is idle). */
  readonly idleMs: number;
  /** Given to every worker at start (structured clone; holds key material: never logged). */
  readonly workerData: unknown;
  /**
   * The nice value the workers' threads take (the pool at their start, and the seed tells them);
   * no other thread is lowered (worker-priority.ts). 0: none.
   */
  readonly nice?: number;
  readonly logger?: Logger;
}

/** What a worker answers for one task. */
export type WorkerReply =
  /** `tally`: what the task counted for the metrics (tally.ts). */
  | { readonly id: number; readonly ok: true; readonly value: unknown; readonly tally?: TallyNews }
  /** Mid-task: the worker needs the main thread's word (RunOptions.onAsk) before it goes on. */
  | { readonly id: number; readonly ask: unknown }
  | {
      readonly id: number;
      readonly ok: false;
      readonly code: ErrorCode;
      readonly detail: string;
      readonly errors?: readonly ValueFailure[];
      /** INTERNAL only: the name of what was thrown (never its message, which may quote data). */
      readonly causeName?: string;
      /** The thrown DpgError's own name when it was a subclass (e.g. RefusedInputError): callers may test it. */
      readonly errorName?: string;
    };

/** What the main thread answers a worker's question. */
export type WorkerAnswer = { readonly id: number; readonly answer: unknown } | { readonly id: number; readonly abort: true };

export interface RunOptions {
  /**
   * Moved to the worker, not copied (e.g. a body's ArrayBuffer): the caller's views of them are
   * empty afterwards, so pass only what the caller no longer reads.
   */
  readonly transfer?: readonly ArrayBuffer[];
  /**
   * Answers the worker's questions (e.g. may this client run this job?). What it throws fails the
   * task with that very error; the worker is told to stop and protects nothing.
   */
  readonly onAsk?: (question: unknown) => unknown;
}

interface Task {
  readonly id: number;
  readonly message: object;
  readonly options: RunOptions;
  /** What onAsk threw: the task fails with it whatever the worker answers next. */
  askError?: unknown;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

interface Slot {
  readonly worker: Worker;
  task?: Task;
  timer?: NodeJS.Timeout;
  idleTimer?: NodeJS.Timeout;
  /** The worker has built its engine. */
  ready?: boolean;
  /** Set once the slot left the pool (exited, killed, reaped): its events are ignored after. */
  gone?: boolean;
}

/** Every pool made in this process that may still hold workers or tasks (a reload makes a new one). */
const pools = new Set<WorkerPool>();
/** Since the process started, over every pool: for the metrics. */
const lifetime = { started: 0, lost: 0, tasks: 0 };

/** What the worker-pool metrics read at scrape time (core/metrics.ts). */
export interface WorkerPoolStats {
  /** Workers alive now, and of them those running a task. */
  readonly workers: number;
  readonly busy: number;
  /** Tasks waiting for a worker. */
  readonly queued: number;
  /** Workers started; workers lost (crashed, overran or stopped with a task: WORKER_FAILED); tasks answered. */
  readonly started: number;
  readonly lost: number;
  readonly tasks: number;
}

export function workerPoolStats(): WorkerPoolStats {
  let workers = 0;
  let busy = 0;
  let queued = 0;
  for (const pool of pools) {
    const s = pool.load();
    if (s.closing && s.workers === 0 && s.queued === 0) pools.delete(pool);
    workers += s.workers;
    busy += s.busy;
    queued += s.queued;
  }
  return { workers, busy, queued, ...lifetime };
}

export class WorkerPool {
  private readonly slots = new Set<Slot>();
  private readonly queue: Task[] = [];
  private nextId = 1;
  private closing = false;
  /** Workers started since the pool was made (tests and metrics read it). */
  started = 0;

  constructor(private readonly options: WorkerPoolOptions) {
    pools.add(this);
  }

  /** Workers alive, busy, and tasks waiting: read by workerPoolStats. */
  load(): { workers: number; busy: number; queued: number; closing: boolean } {
    let busy = 0;
    for (const slot of this.slots) if (slot.task) busy++;
    return { workers: this.slots.size, busy, queued: this.queue.length, closing: this.closing };
  }

  /** Workers alive now (busy or idle). */
  get size(): number {
    return this.slots.size;
  }

  /** Runs one task in a worker; rejects with WORKER_FAILED when the worker dies or overruns. */
  run(message: object, options: RunOptions = {}): Promise<unknown> {
    if (this.closing) return Promise.reject(new DpgError('WORKER_FAILED', 'The protection workers are shutting down; retry'));
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, message, options, resolve, reject });
      this.dispatch();
    });
  }

  /**
   * Stops taking tasks; queued and running tasks still finish (a reload swaps in a new pool and lets
   * the old one drain, so each request runs under the configuration it started with).
   */
  close(): void {
    this.closing = true;
    for (const slot of [...this.slots]) if (!slot.task) this.remove(slot);
  }

  /** Ends every worker now; running and queued tasks fail with WORKER_FAILED. */
  async terminate(): Promise<void> {
    this.closing = true;
    for (const task of this.queue.splice(0)) task.reject(new DpgError('WORKER_FAILED', 'The protection workers were stopped; retry'));
    await Promise.all([...this.slots].map((slot) => this.kill(slot, 'The protection workers were stopped; retry')));
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      let slot = [...this.slots].find((s) => !s.task);
      if (!slot) {
        if (this.slots.size >= this.options.max) return;
        slot = this.spawn();
      }
      this.assign(slot, this.queue.shift()!);
    }
    if (this.closing) for (const slot of [...this.slots]) if (!slot.task) this.remove(slot);
  }

  private spawn(): Slot {
    const before = this.options.nice ? threadIds() : new Set<number>();
    const worker = new Worker(workerEntry(), {
      workerData: this.options.workerData,
      execArgv: loaderArgs(),
    });
    // The constructor has created the worker's OS thread: lowered now, it loads and compiles its
    // modules (the most CPU of its start) below the event loop, not only once its own code runs.
    lowerNewThreads(before, this.options.nice);
    const slot: Slot = { worker };
    this.slots.add(slot);
    this.started++;
    lifetime.started++;
    this.options.logger?.info({ workers: this.slots.size }, 'protection worker started');
    worker.on('message', (reply: WorkerReply | { readonly ready: true }) => this.settle(slot, reply));
    // An uncaught error (or running out of heap) ends the worker: its task fails closed. The error's
    // message may quote payload data, so only its name is logged.
    worker.on('error', (err) => this.lost(slot, `The protection worker failed (${(err as Error)?.name ?? 'error'}); nothing was sent on. Retry: it has been replaced`));
    worker.on('exit', (code) => this.lost(slot, `The protection worker stopped (exit code ${code}); nothing was sent on. Retry: it has been replaced`));
    return slot;
  }

  private assign(slot: Slot, task: Task): void {
    clearTimeout(slot.idleTimer);
    slot.task = task;
    slot.worker.ref();
    this.startBudget(slot, slot.ready ? this.options.timeoutMs : Math.max(this.options.timeoutMs, START_BUDGET_MS));
    slot.worker.postMessage({ id: task.id, ...task.message }, task.options.transfer as ArrayBuffer[] | undefined);
  }

  /**
   * The task's time budget. A new worker's start (loading modules, compiling manifests) is bounded
   * by its own budget (at least START_BUDGET_MS) and the task by a fresh one once the worker says it
   * is ready: a slow start on a busy machine must not eat the document's time.
   */
  private startBudget(slot: Slot, ms = this.options.timeoutMs): void {
    clearTimeout(slot.timer);
    slot.timer = setTimeout(() => {
      this.options.logger?.warn({ timeoutMs: this.options.timeoutMs }, 'protection worker overran its time budget; replaced');
      void this.kill(slot, `The protection worker overran its time budget of ${this.options.timeoutMs} ms (limits.workers.timeoutMs); nothing was sent on`);
    }, ms);
  }

  private settle(slot: Slot, reply: WorkerReply | { readonly ready: true }): void {
    if ('ready' in reply) {
      slot.ready = true;
      if (!slot.gone && slot.task) this.startBudget(slot);
      return;
    }
    const task = slot.task;
    if (slot.gone || !task || reply.id !== task.id) return;
    if ('ask' in reply) return this.answer(slot, task, reply.ask);
    clearTimeout(slot.timer);
    slot.task = undefined;
    slot.worker.unref();
    lifetime.tasks++;
    if (task.askError !== undefined) task.reject(task.askError);
    else if (reply.ok) {
      if (reply.tally !== undefined) addNews(reply.tally);
      task.resolve(reply.value);
    }
    else {
      // The doors log an INTERNAL error's cause by name: keep the worker's, without a message.
      const cause = reply.causeName === undefined ? undefined : Object.assign(new Error(''), { name: reply.causeName });
      const err = new DpgError(reply.code, reply.detail, { ...(reply.errors ? { errors: reply.errors } : {}), ...(cause ? { cause } : {}) });
      if (reply.errorName !== undefined) err.name = reply.errorName;
      task.reject(err);
    }
    if (this.queue.length > 0) this.dispatch(); // this slot takes the next task
    else if (this.closing) this.remove(slot);
    else slot.idleTimer = setTimeout(() => this.remove(slot), this.options.idleMs).unref();
  }

  /** A worker's question: onAsk's answer goes back; what it throws stops the worker's task and fails it. */
  private answer(slot: Slot, task: Task, question: unknown): void {
    let message: WorkerAnswer;
    try {
      if (!task.options.onAsk) throw new DpgError('INTERNAL', 'A protection worker asked a question nobody answers');
      message = { id: task.id, answer: task.options.onAsk(question) };
    } catch (err) {
      task.askError = err;
      message = { id: task.id, abort: true };
    }
    slot.worker.postMessage(message);
  }

  /** The worker died under its own steam (crash, exit): fail its task and let a new one take the line. */
  private lost(slot: Slot, detail: string): void {
    if (slot.gone) return;
    if (slot.task) this.options.logger?.error({ detail }, 'protection worker lost');
    this.forget(slot, detail);
    this.dispatch();
  }

  private async kill(slot: Slot, detail: string): Promise<void> {
    if (slot.gone) return;
    this.forget(slot, detail);
    await slot.worker.terminate();
    this.dispatch();
  }

  /** Reaping an idle worker: no task to fail. */
  private remove(slot: Slot): void {
    if (slot.gone) return;
    this.forget(slot, '');
    this.options.logger?.info({ workers: this.slots.size }, 'protection worker stopped (idle)');
    void slot.worker.terminate();
  }

  private forget(slot: Slot, detail: string): void {
    slot.gone = true;
    this.slots.delete(slot);
    clearTimeout(slot.timer);
    clearTimeout(slot.idleTimer);
    const task = slot.task;
    slot.task = undefined;
    if (task) lifetime.lost++;
    task?.reject(new DpgError('WORKER_FAILED', detail));
  }
}

/**
 * The worker's module. From the sources (tests, `node --import ./scripts/ts-loader.mjs`) it is the
 * TypeScript file beside this one; in dist/ the bundler emits it as dist/protect-worker.js
 * (scripts/build.mjs) while this code sits in dist/cli.js or in a chunk under dist/chunks/.
 */
export function workerEntry(): URL {
  const here = import.meta.url;
  if (here.endsWith('.ts')) return new URL('./protect-worker.ts', here);
  return new URL(/\/chunks\/[^/]*$/.test(here) ? '../protect-worker.js' : './protect-worker.js', here);
}

/**
 * The parent's module loader flags only (`--import ./scripts/ts-loader.mjs` when running from the
 * sources): a worker needs them to load TypeScript, and other process-wide flags are refused by Worker.
 */
function loaderArgs(): string[] {
  const out: string[] = [];
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (/^--(import|require|loader|experimental-loader)=/.test(a) || a === '--enable-source-maps') out.push(a);
    else if (/^--(import|require|loader|experimental-loader)$/.test(a) && i + 1 < argv.length) out.push(a, argv[++i]!);
  }
  return out;
}
