// CPU time and RSS of a process and its children, read from /proc (Linux): what the peer and
// proxy-CPU benches charge each proxy with.

import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim() || 100);

function treeOf(root: number): number[] {
  const parents = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // Fields after the command (which may hold spaces) start after the last ')'.
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parents.set(Number(name), Number(rest[1]));
    } catch {
      // The process ended while we looked.
    }
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) for (const [pid, ppid] of parents) if (ppid === tree[i]) tree.push(pid);
  return tree;
}

/** CPU seconds (user + system) used so far by the tree under `root`. */
export function cpuSeconds(root: number): number {
  let ticks = 0;
  for (const pid of treeOf(root)) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(rest[11]) + Number(rest[12]);
    } catch {
      // gone
    }
  }
  return ticks / CLOCK_TICKS;
}

export function rssMb(root: number): number {
  let kb = 0;
  for (const pid of treeOf(root)) {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (m) kb += Number(m[1]);
    } catch {
      // gone
    }
  }
  return kb / 1024;
}
