// `dpg inject`: manual sidecar injection of a YAML stream (every workload kind), like
// `istioctl kube-inject`; `--check` is the validating check for CI pipelines.

import { readFileSync } from 'node:fs';
import { parseFlags, UsageError, type CliIo, type Command, type FlagSpec } from '../command.ts';
import type { InjectorOptions } from '../../k8s/index.ts';

const MAX_INPUT_BYTES = 64 * 1024 * 1024;

/** What is injected, for `dpg inject` and `dpg webhook` alike. */
export const injectorFlags = {
  image: { type: 'string', value: 'IMAGE', help: 'the gateway image to inject (default dpg:<version>)' },
  'image-pull-policy': { type: 'string', value: 'POLICY', help: 'Always, IfNotPresent or Never (default: unset)' },
  default: { type: 'string', multiple: true, value: 'dpg.io/NAME=VALUE', help: 'a default for pods without that annotation' },
} as const satisfies FlagSpec;

/** The injector options those flags give; a bad value is a UsageError. Loads src/k8s. */
export async function injectorFromFlags(values: { image?: unknown; 'image-pull-policy'?: unknown; default?: unknown }): Promise<InjectorOptions> {
  const k8s = await import('../../k8s/index.ts');
  const { options, problems } = k8s.injectorOptions({
    image: values.image as string | undefined,
    imagePullPolicy: values['image-pull-policy'] as string | undefined,
    defaults: values.default as string[] | undefined,
  });
  if (!options) throw new UsageError(problems.join('; '));
  return options;
}

const flags = {
  filename: { type: 'string', short: 'f', value: 'FILE|-', help: 'the YAML (or JSON) stream to inject; - for standard input' },
  ...injectorFlags,
  check: { type: 'boolean', help: 'write nothing; exit 1 when any workload is not injected as this version would inject it' },
} as const satisfies FlagSpec;

async function readInput(file: string, io: CliIo): Promise<string> {
  if (file !== '-') return readFileSync(file, 'utf8');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of io.stdin) {
    const b = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += b.length;
    if (size > MAX_INPUT_BYTES) throw new UsageError('standard input is larger than 64 MiB');
    chunks.push(b);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export const injectCommand: Command = {
  name: 'inject',
  summary: 'add the gateway sidecar to Kubernetes workloads in a YAML stream',
  usage: `dpg inject -f FILE|- [--image IMAGE] [--image-pull-policy POLICY] [--default dpg.io/NAME=VALUE]... [--check]
    Writes the stream with every Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job and CronJob
    injected (other kinds unchanged); notes go to stderr. --check writes nothing and exits 1 when any
    workload is not injected as this version would inject it; a pod without a keyring Secret
    (dpg.io/keyring) gets a warning line on stderr, which does not change the exit code. See docs/kubernetes.md.`,
  options: flags,
  async run(args, io) {
    const { values, positionals } = parseFlags(args, flags);
    if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0].slice(0, 40))}`);
    const file = values.filename as string | undefined;
    if (!file) throw new UsageError('-f FILE (or -f - for standard input) is required');
    const options = await injectorFromFlags(values);
    const k8s = await import('../../k8s/index.ts');
    let text: string;
    try {
      text = await readInput(file, io);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (!code) throw err;
      io.stderr.write(`dpg inject: cannot read ${file === '-' ? 'standard input' : JSON.stringify(file)} (${code})\n`);
      return 1;
    }

    if (values.check) {
      const { ok, reports } = k8s.checkStream(text, options);
      for (const r of reports) {
        // Not a failure: the pod is as this version would inject it, with a risk worth knowing.
        for (const w of r.warnings ?? []) io.stderr.write(`document ${r.document} ${r.object}: warning: ${w}\n`);
        if (r.outcome === 'unchanged' || r.outcome === 'passed-through') continue;
        const why = r.outcome === 'injected' ? 'not injected as this version would inject it (run dpg inject)' : r.outcome;
        const details = r.outcome === 'injected' ? [] : r.messages;
        io.stderr.write(`document ${r.document} ${r.object}: ${why}${details.map((m) => `\n  ${m}`).join('')}\n`);
      }
      return ok ? 0 : 1;
    }

    const result = k8s.injectStream(text, options);
    for (const r of result.reports) {
      if (r.outcome === 'passed-through' || (r.outcome !== 'refused' && r.messages.length === 0)) continue;
      io.stderr.write(`document ${r.document} ${r.object}: ${r.outcome}${r.messages.map((m) => `\n  ${m}`).join('')}\n`);
    }
    if (result.output === undefined) {
      io.stderr.write('dpg inject: nothing written (fix the documents above)\n');
      return 1;
    }
    io.stdout.write(result.output);
    return 0;
  },
};
