// Whether a function's cost grows linearly with its input, told without a wall clock: the same
// bytes are processed as 16 inputs of n/16 and as one input of n, and the CPU time of the two is
// compared. CPU time, not wall time: a busy machine delays a process but does not add to its CPU
// time, and a ratio of two measurements taken moments apart cancels the machine's speed. Linear code
// gives a ratio near 1, quadratic code near 16; tests assert well below 16 and well above 1.

/** The CPU time (µs) of the fastest of `tries` runs: the least disturbed by the collector. */
function cpuMicros(fn: () => void, tries = 5): number {
  let best = Infinity;
  for (let i = 0; i < tries; i++) {
    const before = process.cpuUsage();
    fn();
    const used = process.cpuUsage(before);
    best = Math.min(best, used.user + used.system);
  }
  return best;
}

/**
 * `runFor(size)` prepares an input of `size` and returns the work on it. Returns how many times
 * more CPU one input of `size` costs than 16 inputs of size/16 (≈1 linear, ≈16 quadratic).
 */
export function growthRatio(runFor: (size: number) => () => unknown, size: number): number {
  const small = runFor(Math.floor(size / 16));
  const large = runFor(size);
  small();
  large(); // warm-up (compilation), not measured
  // The smallest of three ratios: a collection landing in one measurement inflates it (seen up to
  // 4–10× on linear code), while quadratic code stays near 16 every time.
  let ratio = Infinity;
  for (let round = 0; round < 3; round++) {
    const sixteenSmall = cpuMicros(() => {
      for (let i = 0; i < 16; i++) small();
    });
    const oneLarge = cpuMicros(() => void large());
    ratio = Math.min(ratio, oneLarge / Math.max(sixteenSmall, 1));
  }
  return ratio;
}
