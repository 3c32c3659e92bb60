// Where a server's CPU and allocations go, grouped by source file (and by our own functions): the
// per-request tables of docs/performance.md. Reads a V8 CPU profile (inspector `Profiler.stop`) and
// a sampling heap profile (`HeapProfiler.stopSampling`) taken over a known number of requests, and
// prints each group's share per request: self (in the group's own code) and total (the group on the
// stack: what removing it would save at most).

/** V8's call frame, as its CPU and heap profiles write it (the bench's profile readers share these types). */
export interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

export interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: readonly number[];
}

/** A `.cpuprofile` (node --cpu-prof, or inspector `Profiler.stop`). */
export interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface HeapNode {
  readonly callFrame: CallFrame;
  readonly selfSize: number;
  readonly children: readonly HeapNode[];
}

/** A frame's group: a file of ours (src/, bench/, test/), a package, a node: module, or a VM state. */
export function groupOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (url === '') return functionName.startsWith('(') ? functionName : `(native ${functionName || 'anonymous'})`;
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const [scope, name] = url.slice(modules + 14).split('/');
    return scope?.startsWith('@') ? `${scope}/${name}` : (scope ?? url);
  }
  if (url.startsWith('node:')) return url;
  for (const dir of ['/src/', '/bench/', '/test/']) {
    const at = url.lastIndexOf(dir);
    if (at >= 0) return url.slice(at + 1);
  }
  return url;
}

/** One of our functions (src/ only): `file name`. */
function ownFunctionOf(frame: CallFrame): string | undefined {
  const group = groupOf(frame);
  return group.startsWith('src/') ? `${group} ${frame.functionName || '(anonymous)'}` : undefined;
}

export interface Row {
  readonly name: string;
  readonly self: number;
  readonly total: number;
}

/**
 * Self and total per key over the samples. `keyOf` maps a frame to its key (undefined: not counted);
 * total counts a key once per sample however deep it recurs.
 */
function tally(
  nodes: readonly { id: number; frame: CallFrame; parent: number | undefined }[],
  weights: ReadonlyMap<number, number>,
  keyOf: (frame: CallFrame) => string | undefined,
): Row[] {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  const onStack = new Map<number, readonly string[]>();
  const keysOnStack = (id: number): readonly string[] => {
    const known = onStack.get(id);
    if (known !== undefined) return known;
    const node = byId.get(id)!;
    const above = node.parent === undefined ? [] : keysOnStack(node.parent);
    const key = keyOf(node.frame);
    const keys = key === undefined || above.includes(key) ? above : [...above, key];
    onStack.set(id, keys);
    return keys;
  };
  for (const [id, weight] of weights) {
    const key = keyOf(byId.get(id)!.frame);
    if (key !== undefined) self.set(key, (self.get(key) ?? 0) + weight);
    for (const k of keysOnStack(id)) total.set(k, (total.get(k) ?? 0) + weight);
  }
  return [...total].map(([name, t]) => ({ name, self: self.get(name) ?? 0, total: t })).sort((a, b) => b.self - a.self);
}

function cpuNodes(profile: CpuProfile): { id: number; frame: CallFrame; parent: number | undefined }[] {
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  return profile.nodes.map((n) => ({ id: n.id, frame: n.callFrame, parent: parent.get(n.id) }));
}

/** Microseconds of each node's samples. */
function cpuWeights(profile: CpuProfile): Map<number, number> {
  const weights = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    weights.set(id, (weights.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  return weights;
}

function heapNodes(head: HeapNode): { nodes: { id: number; frame: CallFrame; parent: number | undefined }[]; weights: Map<number, number> } {
  const nodes: { id: number; frame: CallFrame; parent: number | undefined }[] = [];
  const weights = new Map<number, number>();
  const walk = (n: HeapNode, parent: number | undefined): void => {
    const id = nodes.length;
    nodes.push({ id, frame: n.callFrame, parent });
    if (n.selfSize > 0) weights.set(id, n.selfSize);
    for (const c of n.children) walk(c, id);
  };
  walk(head, undefined);
  return { nodes, weights };
}

/** CPU per request by group and by our own functions, idle time left out. */
export function cpuTables(profile: CpuProfile, requests: number): { groups: Row[]; functions: Row[]; busyUs: number } {
  const nodes = cpuNodes(profile);
  const weights = cpuWeights(profile);
  const idle = new Set(nodes.filter((n) => n.frame.functionName === '(idle)').map((n) => n.id));
  for (const id of idle) weights.delete(id);
  let busy = 0;
  for (const w of weights.values()) busy += w;
  const perRequest = (rows: Row[]) => rows.map((r) => ({ name: r.name, self: r.self / requests, total: r.total / requests }));
  return { groups: perRequest(tally(nodes, weights, groupOf)), functions: perRequest(tally(nodes, weights, ownFunctionOf)), busyUs: busy / requests };
}

/** Bytes allocated per request by group and by our own functions. */
export function allocationTables(head: HeapNode, requests: number): { groups: Row[]; functions: Row[]; bytes: number } {
  const { nodes, weights } = heapNodes(head);
  let bytes = 0;
  for (const w of weights.values()) bytes += w;
  const perRequest = (rows: Row[]) => rows.map((r) => ({ name: r.name, self: r.self / requests, total: r.total / requests }));
  return { groups: perRequest(tally(nodes, weights, groupOf)), functions: perRequest(tally(nodes, weights, ownFunctionOf)), bytes: bytes / requests };
}

/** Prints the first `limit` rows as a Markdown table (ready for docs/performance.md). */
export function printTable(title: string, unit: string, rows: readonly Row[], limit: number): void {
  console.log(`\n${title}\n\n| where | self ${unit}/request | total ${unit}/request |\n|---|---:|---:|`);
  for (const r of rows.slice(0, limit)) console.log(`| ${r.name} | ${r.self.toFixed(1)} | ${r.total.toFixed(1)} |`);
}
