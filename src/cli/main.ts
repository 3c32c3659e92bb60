// The `dpg` command: finds the subcommand in the registry and runs it; answers --help (for every
// command, from its description) and --version. Errors print code and our own detail only — never
// payload content.

import packageJson from '../../package.json' with { type: 'json' };
import { DATA_SET_TYPES, JOB_TYPES } from '../core/types.ts';
import { ConfigError, StartupError, formatConfigProblem, toDpgError } from '../core/errors.ts';
import { UsageError, asksForHelp, commandHelp, type CliIo } from './command.ts';
import { COMMANDS } from './registry.ts';

export type { CliIo } from './command.ts';

export const VERSION: string = packageJson.version;

function usage(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  const lines = [`dpg ${VERSION} — data protection gateway`, '', 'Usage: dpg <command> [flags]   (dpg <command> --help for its flags)', '', 'Commands:'];
  for (const c of COMMANDS) lines.push(`  ${c.name.padEnd(width)}  ${c.summary}`);
  lines.push(
    '',
    `Job types:  ${JOB_TYPES.join(', ')}`,
    `Data types: ${DATA_SET_TYPES.join(', ')}`,
    '',
    'Environment: DPG_CONFIG (config file; default config/gateway.yaml in the working directory),',
    '  DPG_DATA_DIR (generated keyring, identity keys, proxy CA; default .dpg beside the config file),',
    '  DPG_HTTP_ADDR, DPG_GRPC_ADDR, DPG_PROXY_ADDR, DPG_TRANSPARENT_ADDR (host:port),',
    '  DPG_ADMIN_ADDR (host:port or off), DPG_LOG_LEVEL.',
    '',
    '  -h, --help     this help',
    '  -V, --version  print the version',
    '',
  );
  return lines.join('\n');
}

const defaultIo: CliIo = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin };

/** Runs one command; resolves to the process exit code. */
export async function main(argv: readonly string[], io: CliIo = defaultIo): Promise<number> {
  if (io === defaultIo) quietOnClosedPipe();
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    const topic = name === 'help' ? COMMANDS.find((c) => c.name === rest[0]) : undefined;
    io.stdout.write(topic ? commandHelp(topic) : usage());
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === '-V' || name === 'version') {
    io.stdout.write(`dpg ${VERSION}\n`);
    return 0;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    io.stderr.write(`dpg: unknown command ${JSON.stringify(name.slice(0, 40))}\n\n${usage()}`);
    return 2;
  }
  if (asksForHelp(rest)) {
    io.stdout.write(commandHelp(command));
    return 0;
  }
  try {
    return await command.run(rest, io);
  } catch (err) {
    return reportError(err, io, command.name);
  }
}

/**
 * A reader that stops early (`dpg protect … | head`) closes our stdout: that is its choice, not our
 * failure, so the process ends quietly instead of printing an EPIPE stack trace.
 */
function quietOnClosedPipe(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
}

function reportError(err: unknown, io: CliIo, command: string): number {
  if ((err as NodeJS.ErrnoException)?.code === 'EPIPE') return 0;
  if (err instanceof ConfigError) {
    io.stderr.write(`dpg: configuration problems:\n${err.problems.map((p) => `  ${formatConfigProblem(p)}`).join('\n')}\n`);
    const defaultMissing = err.problems.some((p) => p.message === 'file not found' && p.file.endsWith('config/gateway.yaml'));
    if (defaultMissing && !process.env.DPG_CONFIG) {
      io.stderr.write('(no --config FILE or DPG_CONFIG given: dpg reads config/gateway.yaml in the working directory)\n');
    }
    return 1;
  }
  if (err instanceof UsageError) {
    io.stderr.write(`dpg ${command}: ${err.message}\n(see dpg ${command} --help)\n`);
    return 2;
  }
  if (err instanceof StartupError) {
    io.stderr.write(`dpg ${command}: ${err.message}\n`);
    return 1;
  }
  const e = toDpgError(err);
  const lines = [`dpg: ${e.code}: ${e.message}`];
  // Our own message is withheld (it may quote data); the kind of failure helps a bug report.
  if (e.code === 'INTERNAL' && err instanceof Error) lines[0] += ` (${err.name}${(err as NodeJS.ErrnoException).code ? ` ${(err as NodeJS.ErrnoException).code}` : ''})`;
  for (const f of (e.errors ?? []).slice(0, 20)) lines.push(`  ${f.location}: ${f.reason}`);
  io.stderr.write(`${lines.join('\n')}\n`);
  return 1;
}
