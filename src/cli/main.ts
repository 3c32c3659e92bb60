// The `dpg` command: finds the subcommand in the registry and runs it. Errors print code and our own
// detail only — never payload content.

import { ConfigError, formatConfigProblem, toDpgError } from '../core/errors.ts';
import { UsageError, type CliIo } from './command.ts';
import { COMMANDS } from './registry.ts';

export type { CliIo } from './command.ts';

function usage(): string {
  const lines = ['dpg — data protection gateway', '', 'Usage:'];
  for (const c of COMMANDS) lines.push(`  ${c.usage.replace(/\n/g, '\n  ')}`);
  lines.push('  dpg --help', '', 'Environment: DPG_CONFIG, DPG_DATA_DIR, DPG_HTTP_ADDR, DPG_GRPC_ADDR, DPG_PROXY_ADDR, DPG_LOG_LEVEL.', '');
  return lines.join('\n');
}

const defaultIo: CliIo = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin };

/** Runs one command; resolves to the process exit code. */
export async function main(argv: readonly string[], io: CliIo = defaultIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(usage());
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    io.stderr.write(`dpg: unknown command ${JSON.stringify(name.slice(0, 40))}\n\n${usage()}`);
    return 2;
  }
  try {
    return await command.run(rest, io);
  } catch (err) {
    return reportError(err, io);
  }
}

function reportError(err: unknown, io: CliIo): number {
  if (err instanceof ConfigError) {
    io.stderr.write(`dpg: configuration problems:\n${err.problems.map((p) => `  ${formatConfigProblem(p)}`).join('\n')}\n`);
    return 1;
  }
  if (err instanceof UsageError) {
    io.stderr.write(`dpg: ${err.message}\n(see dpg --help)\n`);
    return 2;
  }
  const e = toDpgError(err);
  const lines = [`dpg: ${e.code}: ${e.message}`];
  for (const f of (e.errors ?? []).slice(0, 20)) lines.push(`  ${f.location}: ${f.reason}`);
  io.stderr.write(`${lines.join('\n')}\n`);
  return 1;
}
