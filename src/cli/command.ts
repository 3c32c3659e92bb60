// What every `dpg` subcommand is: a name, one line for the command list, its usage text, and a run
// function resolving to the exit code. Commands are listed in registry.ts; main.ts dispatches.

import { parseArgs } from 'node:util';

export interface CliIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  readonly stdin: NodeJS.ReadableStream;
}

export interface Command {
  readonly name: string;
  /** One line for `dpg --help`. */
  readonly summary: string;
  /** Full usage for `dpg <command> --help`. */
  readonly usage: string;
  run(args: readonly string[], io: CliIo): Promise<number> | number;
}

/** Wrong flags or arguments: printed with a pointer to the help, exit code 2. */
export class UsageError extends Error {}

export type FlagSpec = Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }>;

/** Strict flag parsing; an unknown or malformed flag is a UsageError naming it. */
export function parseFlags(args: readonly string[], options: FlagSpec) {
  try {
    return parseArgs({ args: [...args], options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message.split('\n')[0]);
  }
}
