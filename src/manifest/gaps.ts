// "No silent gaps": a field that one job type protects and another leaves in clear is a manifest
// mistake more often than a choice (an "anonymised" export still holding card numbers). Each such
// field is reported once, naming the job types; `Keep` marks a job type that leaves it in clear on
// purpose. Warnings by default; errors when the manifest says `strict: true`.

import type { ConfigProblem } from '../core/errors.ts';
import { FORWARD_JOB_TYPES, type ForwardJobType } from '../core/types.ts';
import type { FieldDef } from './definition.ts';

/** The job-type gaps of a manifest's fields, one problem per field. */
export function findGaps(fields: readonly FieldDef[], file: string): ConfigProblem[] {
  const defined = new Set<ForwardJobType>();
  for (const field of fields) for (const job of jobsWithRules(field)) defined.add(job);
  const problems: ConfigProblem[] = [];
  for (const field of fields) {
    const covered = jobsWithRules(field);
    if (covered.size === 0) continue;
    const keep = new Set(field.keep ?? []);
    const missing: string[] = [];
    for (const job of FORWARD_JOB_TYPES) {
      if (!defined.has(job) || keep.has(job) || field.rules[job] !== undefined) continue;
      missing.push(covered.has(job) ? `${job} (only under a \`when\` condition)` : job);
    }
    if (missing.length === 0) continue;
    const by = FORWARD_JOB_TYPES.filter((j) => field.rules[j] !== undefined);
    problems.push({
      file,
      line: field.line,
      message:
        `${describe(field)} is protected by ${by.join(', ') || 'a conditional rule'} but left in clear by ${missing.join(', ')}: ` +
        'add a rule, or write `Keep` for a job type that leaves it in clear on purpose',
    });
  }
  return problems;
}

function jobsWithRules(field: FieldDef): Set<ForwardJobType> {
  const jobs = new Set<ForwardJobType>();
  for (const job of FORWARD_JOB_TYPES) {
    if (field.rules[job] !== undefined) jobs.add(job);
    for (const o of field.when) if (o.rules[job] !== undefined) jobs.add(job);
  }
  return jobs;
}

function describe(field: FieldDef): string {
  const s = field.selector;
  if (s.kind === 'name') return `field ${s.names.join(', ')}`;
  if (s.kind === 'path') return `field ${s.path}`;
  return `detected kind ${s.detected}`;
}
