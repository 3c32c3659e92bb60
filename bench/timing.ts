// The timing loop every micro-benchmark shares: warm up, then run until a time budget is spent.

export interface LoopResult {
  readonly iterations: number;
  readonly elapsedMs: number;
  /** Milliseconds per run. */
  readonly perOpMs: number;
  /** Runs per second. */
  readonly perSecond: number;
}

export function timeLoop(run: () => unknown, budgetMs: number, warmup = 0): LoopResult {
  for (let i = 0; i < warmup; i++) run();
  let iterations = 0;
  const start = performance.now();
  let elapsedMs = 0;
  while (elapsedMs < budgetMs) {
    run();
    iterations++;
    elapsedMs = performance.now() - start;
  }
  return { iterations, elapsedMs, perOpMs: elapsedMs / iterations, perSecond: (iterations / elapsedMs) * 1000 };
}
