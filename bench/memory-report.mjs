// Loaded with `node --import ./bench/memory-report.mjs` by bench/footprint.bench.ts: on SIGUSR2 the
// process writes one line to stderr splitting its memory (process.memoryUsage and V8's heap spaces).
// Bench-only; nothing in the gateway imports it.
import { getHeapSpaceStatistics } from 'node:v8';

const mb = (x) => (x / 1048576).toFixed(1);
process.on('SIGUSR2', () => {
  const m = process.memoryUsage();
  const spaces = getHeapSpaceStatistics()
    .filter((s) => s.space_size > 0)
    .map((s) => `${s.space_name.replace(/_space$/, '')} ${mb(s.space_used_size)}/${mb(s.space_size)}`)
    .join(', ');
  process.stderr.write(`memoryUsage: rss ${mb(m.rss)}, heapTotal ${mb(m.heapTotal)}, heapUsed ${mb(m.heapUsed)}, external ${mb(m.external)}, arrayBuffers ${mb(m.arrayBuffers)} MB; heap spaces used/size MB: ${spaces}\n`);
});
