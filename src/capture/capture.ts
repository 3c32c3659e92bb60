// `dpg capture` as a function: options → rules for IPv4 and IPv6 → applied (or printed, or removed)
// → probed. Output lines go to `say`; a problem throws with a message the user can act on.

import { existsSync } from 'node:fs';
import { applyRules, describeApply, ensureJumps, findTools, removeRules, type Backend, type Tools } from './iptables.ts';
import { probe } from './probe.ts';
import { checkOptions, describeRoutePorts, effectivePorts, restoreInput, uncapturedRoutes, type CaptureOptions, type Family, type PortedRoute } from './rules.ts';

export interface CaptureRun {
  readonly options: CaptureOptions;
  readonly backend: Backend;
  readonly mode: 'apply' | 'dry-run' | 'remove';
  /** Where the default include ports came from, for the summary line. */
  readonly portsFrom: string;
  /** The config's routes: each one's port must be captured. */
  readonly routes?: readonly PortedRoute[];
  /** The config file the routes were read from, for the summary. */
  readonly configFile?: string;
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

  if (mode !== 'remove') {
    // What the rules will capture next to what the routes need, before anything is installed.
    const routes = run.routes ?? [];
    const note = mode === 'dry-run' ? '# ' : '';
    say(`${note}routes${run.configFile ? ` (${run.configFile})` : ''}: ${describeRoutePorts(routes)}`);
    say(`${note}captured: ${describePorts(options)} (${run.portsFrom})`);
    const uncaptured = uncapturedRoutes(routes, options);
    if (uncaptured.length > 0) {
      throw new CaptureError(
        `${uncaptured.join('\n')}\na request to such a port would go direct, in clear: nothing was installed. Capture the route's port (--include-ports), or give the route a port, or leave --include-ports and --exclude-ports out`,
      );
    }
  }

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
  say(
    `capture installed (${backend}, IPv${families.join(' and IPv')}): ${describePorts(options)} (${run.portsFrom}) → port ${options.redirectPort}; ` +
      `exempt: UID ${[options.proxyUid, ...(options.excludeUids ?? [])].join(', ')}, loopback${options.excludeCidrs.length ? `, ${options.excludeCidrs.join(', ')}` : ''}`,
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

function describePorts(options: CaptureOptions): string {
  return options.includePorts === '*' ? `every TCP port${options.excludePorts.length ? ` but ${options.excludePorts.join(',')}` : ''}` : `TCP ${effectivePorts(options).join(',')}`;
}

function placeholderTools(backend: Backend, family: Family): Pick<Tools, 'iptables' | 'restore'> {
  const base = family === 4 ? 'iptables' : 'ip6tables';
  return { iptables: `${base}-${backend}`, restore: `${base}-${backend}-restore` };
}

/** A capture problem: printed as is, exit code 1. */
export class CaptureError extends Error {}
