// `dpg capture` as a function: options → rules for IPv4 and IPv6 → applied (or printed, or removed)
// → probed. Output lines go to `say`; a problem throws with a message the user can act on.

import { existsSync } from 'node:fs';
import { applyRules, describeApply, ensureJumps, findTools, removeRules, type Backend, type Tools } from './iptables.ts';
import { probe } from './probe.ts';
import { checkOptions, effectivePorts, restoreInput, type CaptureOptions, type Family } from './rules.ts';

export interface CaptureRun {
  readonly options: CaptureOptions;
  readonly backend: Backend;
  readonly mode: 'apply' | 'dry-run' | 'remove';
  /** Where the default include ports came from, for the summary line. */
  readonly portsFrom: string;
}

/** IPv6 exists in this network namespace (else there is nothing to capture for it). */
export function hasIpv6(): boolean {
  return existsSync('/proc/net/if_inet6');
}

export async function runCapture(run: CaptureRun, say: (line: string) => void): Promise<void> {
  const { options, backend, mode } = run;
  const problems = checkOptions(options);
  if (problems.length > 0) throw new CaptureError(problems.join('\n'));
  const families: Family[] = hasIpv6() ? [4, 6] : [4];

  if (mode === 'dry-run') {
    for (const family of families) {
      const tools = findTools(backend, family);
      const names = typeof tools === 'string' ? placeholderTools(backend, family) : tools;
      say(`# IPv${family}`);
      say(describeApply(names, restoreInput(options, family)));
    }
    return;
  }

  const tools = families.map((family) => {
    const t = findTools(backend, family);
    if (typeof t === 'string') throw new CaptureError(t);
    return t;
  });

  if (mode === 'remove') {
    for (const t of tools) removeRules(t);
    say(`capture removed (IPv${families.join(', IPv')}): no ${backend} rules of dpg are left`);
    return;
  }

  for (const t of tools) {
    applyRules(t, restoreInput(options, t.family));
    ensureJumps(t);
  }
  const ports = options.includePorts === '*' ? `every TCP port${options.excludePorts.length ? ` but ${options.excludePorts.join(',')}` : ''}` : effectivePorts(options).join(',');
  say(
    `capture installed (${backend}, IPv${families.join(' and IPv')}): TCP ${ports} (${run.portsFrom}) → port ${options.redirectPort}; ` +
      `exempt: UID ${options.proxyUid}, loopback${options.excludeCidrs.length ? `, ${options.excludeCidrs.join(', ')}` : ''}`,
  );

  const failures: string[] = [];
  for (const t of tools) {
    const result = await probe(options, t.family);
    if (result.outcome === 'skipped') say(`probe IPv${t.family}: skipped (${result.reason})`);
    else if (result.outcome === 'redirected') say(`probe IPv${t.family}: ${result.target} arrived on port ${options.redirectPort}${result.note ? ` (${result.note})` : ''}`);
    else failures.push(`probe IPv${t.family} to ${result.target} failed: ${result.reason}`);
  }
  if (failures.length > 0) throw new CaptureError(`${failures.join('\n')}\nthe rules are installed but do not redirect; traffic is NOT captured`);
}

function placeholderTools(backend: Backend, family: Family): Pick<Tools, 'iptables' | 'restore'> {
  const base = family === 4 ? 'iptables' : 'ip6tables';
  return { iptables: `${base}-${backend}`, restore: `${base}-${backend}-restore` };
}

/** A capture problem: printed as is, exit code 1. */
export class CaptureError extends Error {}
