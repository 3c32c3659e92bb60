// What every `dpg` subcommand is: a name, one line for the command list, its usage text, its flags
// (described, so `dpg <command> --help` is generated for every command), and a run function
// resolving to the exit code. Commands are listed in registry.ts; main.ts dispatches.
//
// A command module must stay light to import: every command is loaded for `dpg --help`, so heavy
// modules (the engine, a door, a client library) are imported inside run() with `await import()`.

import { parseArgs } from 'node:util';

export interface CliIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  readonly stdin: NodeJS.ReadableStream;
}

export interface FlagOption {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
  readonly multiple?: boolean;
  /** Placeholder of a string flag's value in help (`FILE`, `N`); default `VALUE`. */
  readonly value?: string;
  /** One line for `dpg <command> --help`. */
  readonly help?: string;
}

export type FlagSpec = Record<string, FlagOption>;

export interface Command {
  readonly name: string;
  /** One line for `dpg --help`. */
  readonly summary: string;
  /** Synopsis and description for `dpg <command> --help`. */
  readonly usage: string;
  /** The command's flags: listed with their short forms in `dpg <command> --help`. */
  readonly options?: FlagSpec;
  /** More help after the flag list (accepted values, examples). */
  readonly details?: string;
  run(args: readonly string[], io: CliIo): Promise<number> | number;
}

/** Wrong flags or arguments: printed with a pointer to the help, exit code 2. */
export class UsageError extends Error {}

/** An argument that is a negative number (`-1`, `-5`, `-1e3x`): no flag's name starts with a digit. */
const NEGATIVE_NUMBER = /^-\d/;

/**
 * `--flag -1` and `-w -1` as `--flag=-1`: parseArgs refuses a separate value starting with a dash
 * as ambiguous, which would hide the flag's own message (its accepted range) behind node's. Only
 * a value flag followed by a negative number is joined; everything after `--` stays as it is.
 */
function joinNegativeValues(args: readonly string[], options: FlagSpec): string[] {
  const byShort = new Map(Object.entries(options).flatMap(([name, o]) => (o.short ? [[o.short, name] as const] : [])));
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') {
      out.push(...args.slice(i));
      break;
    }
    const name = arg.startsWith('--') ? arg.slice(2) : /^-[^-]$/.test(arg) ? byShort.get(arg[1]!) : undefined;
    const next = args[i + 1];
    if (name !== undefined && options[name]?.type === 'string' && next !== undefined && NEGATIVE_NUMBER.test(next)) {
      out.push(`--${name}=${next}`);
      i++;
    } else out.push(arg);
  }
  return out;
}

/** Strict flag parsing; an unknown or malformed flag is a UsageError naming it. */
export function parseFlags<T extends FlagSpec>(args: readonly string[], options: T) {
  try {
    // parseArgs ignores the help fields (value, help) of each option.
    return parseArgs({ args: joinNegativeValues(args, options), options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message.split('\n')[0]);
  }
}

/**
 * A whole-number flag: undefined when absent, else an integer within [min, max]; anything else is
 * a UsageError naming the flag and the accepted range.
 */
export function integerFlag(value: unknown, flag: string, range: { min?: number; max?: number } = {}): number | undefined {
  if (value === undefined) return undefined;
  const min = range.min ?? 0;
  const max = range.max ?? Number.MAX_SAFE_INTEGER;
  const text = String(value).trim();
  const n = /^-?\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`--${flag} must be a whole number from ${min} to ${max} (got ${JSON.stringify(text.slice(0, 20))})`);
  }
  return n;
}

/** `dpg <command> --help`: the usage text, then every flag with its short form, then the details. */
export function commandHelp(command: Command): string {
  const lines = [command.usage.replace(/^dpg /, 'Usage: dpg '), ''];
  const options = Object.entries(command.options ?? {});
  if (options.length > 0) {
    lines.push('Options:');
    const rows = options.map(([name, o]) => {
      const long = `--${name}${o.type === 'string' ? ` ${o.value ?? 'VALUE'}` : ''}`;
      return [`${o.short ? `-${o.short}, ` : '    '}${long}`, `${o.help ?? ''}${o.multiple ? ' (repeatable)' : ''}`];
    });
    rows.push(['-h, --help', 'show this help']);
    const width = Math.max(...rows.map(([flag]) => flag.length));
    for (const [flag, help] of rows) lines.push(`  ${flag.padEnd(width)}  ${help}`.trimEnd());
    lines.push('');
  }
  if (command.details) lines.push(command.details.trimEnd(), '');
  return lines.join('\n');
}

/** True when the arguments ask for help (before a `--` that ends the flags). */
export function asksForHelp(args: readonly string[]): boolean {
  for (const a of args) {
    if (a === '--') return false;
    if (a === '--help' || a === '-h') return true;
  }
  return false;
}
