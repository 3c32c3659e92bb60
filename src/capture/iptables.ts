// Runs the iptables tools for one address family and backend (nf_tables by default, legacy on
// request): applies rules.ts's restore input atomically, adds the OUTPUT jumps once, removes it
// all again. Each failure carries the tool's own message.

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { CHAIN, JUMPS, type Family, type Jump } from './rules.ts';

export type Backend = 'nft' | 'legacy';

export interface Tools {
  readonly family: Family;
  /** e.g. /usr/sbin/iptables-nft */
  readonly iptables: string;
  /** e.g. /usr/sbin/iptables-nft-restore */
  readonly restore: string;
}

const DIRS = ['', '/usr/sbin/', '/sbin/', '/usr/local/sbin/'];

function run(cmd: string, args: readonly string[], input?: string): { status: number; out: string } {
  const r = spawnSync(cmd, args, { input, encoding: 'utf8', timeout: 30_000 });
  if (r.error) return { status: -1, out: (r.error as NodeJS.ErrnoException).code ?? r.error.message };
  return { status: r.status ?? -1, out: `${r.stdout ?? ''}${r.stderr ?? ''}`.trim() };
}

/** Finds the tools of a backend for a family, or says why there are none. */
export function findTools(backend: Backend, family: Family): Tools | string {
  const base = family === 4 ? 'iptables' : 'ip6tables';
  // Debian installs both variants with a suffix; other distributions may only have the plain name.
  const names = [`${base}-${backend}`, base];
  for (const dir of DIRS) {
    for (const name of names) {
      const cmd = dir + name;
      if (dir !== '' && !existsSync(cmd)) continue;
      const v = run(cmd, ['--version']);
      if (v.status !== 0) continue;
      const isNft = v.out.includes('nf_tables');
      if ((backend === 'nft') !== isNft) continue;
      const restore = name === base ? `${dir}${base}-restore` : `${dir}${base}-${backend}-restore`;
      return { family, iptables: cmd, restore };
    }
  }
  return `${base} (${backend} backend) is not installed: apt-get install iptables (Debian/Ubuntu), apk add iptables ip6tables (Alpine)`;
}

/** Applies one family's restore input: our chains created or flushed and refilled in one transaction. */
export function applyRules(tools: Tools, input: string): void {
  const r = run(tools.restore, ['-w', '5', '--noflush'], input);
  if (r.status !== 0) throw new Error(`${tools.restore} failed (${r.status}): ${r.out}`);
}

/** Adds each OUTPUT jump unless it is already there (so re-running never duplicates it). */
export function ensureJumps(tools: Tools): void {
  for (const jump of JUMPS) {
    const check = run(tools.iptables, ['-w', '5', '-t', jump.table, '-C', ...jump.spec]);
    if (check.status === 0) continue;
    const add = run(tools.iptables, ['-w', '5', '-t', jump.table, '-I', jump.spec[0], '1', ...jump.spec.slice(1)]);
    if (add.status !== 0) throw new Error(`${tools.iptables} -t ${jump.table} -I ${jump.spec.join(' ')} failed: ${add.out}`);
  }
}

/** Removes the jumps (every copy) and our chains; nothing left, no error when there was nothing. */
export function removeRules(tools: Tools): void {
  for (const jump of JUMPS) deleteAll(tools, jump);
  for (const table of ['nat', 'filter']) {
    if (run(tools.iptables, ['-w', '5', '-t', table, '-n', '-L', CHAIN]).status !== 0) continue;
    const flush = run(tools.iptables, ['-w', '5', '-t', table, '-F', CHAIN]);
    const del = run(tools.iptables, ['-w', '5', '-t', table, '-X', CHAIN]);
    if (flush.status !== 0 || del.status !== 0) throw new Error(`${tools.iptables} could not remove ${table}/${CHAIN}: ${flush.out} ${del.out}`.trim());
  }
}

function deleteAll(tools: Tools, jump: Jump): void {
  for (let i = 0; i < 100; i++) {
    if (run(tools.iptables, ['-w', '5', '-t', jump.table, '-D', ...jump.spec]).status !== 0) return;
  }
}

/** The commands `apply` runs, for --dry-run. */
export function describeApply(tools: Pick<Tools, 'iptables' | 'restore'>, input: string): string {
  const jumps = JUMPS.map((j) => `${tools.iptables} -t ${j.table} -C ${j.spec.join(' ')} || ${tools.iptables} -t ${j.table} -I ${j.spec[0]} 1 ${j.spec.slice(1).join(' ')}`);
  return [`${tools.restore} --noflush <<'EOF'`, input.trimEnd(), 'EOF', ...jumps, ''].join('\n');
}
