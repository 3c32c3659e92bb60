// What protection did on this thread, for the metrics: values protected by job type and technique,
// and values found by content detection by job type and kind. Counts only, never values.
//
// Kept apart from the request's summary on purpose: the summary is part of the /api/protect answer
// (its shape is a contract), while these counts are the operator's. Each thread keeps its own tally;
// a protection worker sends what it counted since its last answer with every answer
// (protect-worker.ts), and the main thread adds it to its own (worker-pool.ts). The metrics read the
// main thread's totals at scrape time (core/metrics.ts). Label values come from the manifests'
// technique ids and the detected kinds, so the maps stay small.

/** Counts keyed `jobType \0 label`; what a worker sends and the main thread adds. */
export type TallyCounts = ReadonlyMap<string, number>;

export interface TallyNews {
  readonly techniques: TallyCounts;
  readonly detected: TallyCounts;
}

const SEP = '\u0000';

/** Since the thread started. */
const totals = { techniques: new Map<string, number>(), detected: new Map<string, number>() };
/** Since the last takeNews() (workers only take it). */
let news = { techniques: new Map<string, number>(), detected: new Map<string, number>() };
let hasNews = false;

function add(map: Map<string, number>, key: string, n: number): void {
  map.set(key, (map.get(key) ?? 0) + n);
}

/** `n` values of one request were protected by `technique` (a technique id) in a `jobType` job. */
export function countTechnique(jobType: string, technique: string, n: number): void {
  if (n <= 0) return;
  const key = jobType + SEP + technique;
  add(totals.techniques, key, n);
  add(news.techniques, key, n);
  hasNews = true;
}

/** `n` values of `kind` were found by content detection (and protected or restored) in a `jobType` job. */
export function countDetected(jobType: string, kind: string, n: number): void {
  if (n <= 0) return;
  const key = jobType + SEP + kind;
  add(totals.detected, key, n);
  add(news.detected, key, n);
  hasNews = true;
}

/** What was counted since the last call (undefined: nothing), for a worker's answer. */
export function takeNews(): TallyNews | undefined {
  if (!hasNews) return undefined;
  const out = news;
  news = { techniques: new Map(), detected: new Map() };
  hasNews = false;
  return out;
}

/** A worker's news, added to this thread's totals. Anything malformed is ignored (counts only). */
export function addNews(n: TallyNews): void {
  for (const [key, count] of n.techniques) if (Number.isSafeInteger(count) && count > 0) add(totals.techniques, key, count);
  for (const [key, count] of n.detected) if (Number.isSafeInteger(count) && count > 0) add(totals.detected, key, count);
}

/** This thread's totals, as label pairs. */
export function readTally(): {
  techniques: { jobType: string; technique: string; count: number }[];
  detected: { jobType: string; kind: string; count: number }[];
} {
  const split = (key: string): [string, string] => {
    const i = key.indexOf(SEP);
    return [key.slice(0, i), key.slice(i + 1)];
  };
  return {
    techniques: [...totals.techniques].map(([key, count]) => {
      const [jobType, technique] = split(key);
      return { jobType, technique, count };
    }),
    detected: [...totals.detected].map(([key, count]) => {
      const [jobType, kind] = split(key);
      return { jobType, kind, count };
    }),
  };
}
