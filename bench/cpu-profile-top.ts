// Reads the .cpuprofile files node writes with --cpu-prof and prints where a process's samples
// fell: self time by source (node's internals, undici, the gateway's bundle, GC) and the top
// functions by self time. Used by bench/proxy-cpu.bench.ts (PROXY_CPU_PROFILE=<dir>).

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CpuProfile, ProfileNode } from './profile-table.ts';


/** Where a sample's function comes from, in words. */
function sourceOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  if (url.endsWith('serve-undici.cjs') || url.includes('/undici/')) return 'undici';
  if (url.endsWith('serve.cjs') || url.includes('/dist/')) return 'dpg bundle (ours and bundled libraries)';
  if (url.startsWith('node:')) return url.replace(/^node:(internal\/)?/, 'node:').replace(/\/.*$/, '') ;
  return url;
}

const shortUrl = (url: string): string => url.replace(/^.*\/(dist|node_modules)\//, '$1/').replace(/^file:\/\//, '');

/** Self time of every profile in `dir`, summed by source and by function; and inclusive time (the function or what it called). */
export function summariseProfiles(dir: string, top = 30): string {
  const bySource = new Map<string, number>();
  const byFunction = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let total = 0;
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
    const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    for (let i = 0; i < profile.samples.length; i++) {
      const frame = nodes.get(profile.samples[i])!.callFrame;
      const us = profile.timeDeltas[i] ?? 0;
      if (frame.functionName === '(idle)') continue;
      total += us;
      const source = sourceOf(frame.url, frame.functionName);
      bySource.set(source, (bySource.get(source) ?? 0) + us);
      const name = `${frame.functionName || '(anonymous)'} ${frame.url === '' ? '' : `${shortUrl(frame.url)}:${frame.lineNumber + 1}`}`;
      byFunction.set(name, (byFunction.get(name) ?? 0) + us);
      // Each function on the sample's stack once, however deep it recursed.
      const seen = new Set<string>();
      for (let id: number | undefined = profile.samples[i]; id !== undefined; id = parent.get(id)) {
        const f = nodes.get(id)!.callFrame;
        if (f.functionName === '' || f.functionName.startsWith('(')) continue;
        const key = `${f.functionName} ${sourceOf(f.url, f.functionName)}`;
        if (seen.has(key)) continue;
        seen.add(key);
        inclusive.set(key, (inclusive.get(key) ?? 0) + us);
      }
    }
  }
  const pct = (us: number): string => `${((us / total) * 100).toFixed(1)}%`;
  const lines = [`busy samples: ${(total / 1000).toFixed(0)} ms (idle left out)`, '', '| source | self time |', '|---|---|'];
  for (const [s, us] of [...bySource].sort((a, b) => b[1] - a[1])) lines.push(`| ${s} | ${pct(us)} |`);
  lines.push('', '| function (self time) | share |', '|---|---|');
  for (const [f, us] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`| ${f} | ${pct(us)} |`);
  lines.push('', '| function (inclusive: itself and what it called) | share |', '|---|---|');
  for (const [f, us] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`| ${f} | ${pct(us)} |`);
  return lines.join('\n');
}
