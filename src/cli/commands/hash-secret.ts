// `dpg hash-secret`: the scrypt hash of a client secret or API key, read from stdin only.

import { parseFlags, UsageError, type Command } from '../command.ts';
import { readInput } from './protect.ts';

export const hashSecretCommand: Command = {
  name: 'hash-secret',
  summary: 'hash a client secret or API key (read from stdin) for the config',
  usage: `dpg hash-secret [-]
    Reads a client secret or API key from stdin and prints the hash to put in the config
    (never as an argument: arguments end up in shell history and process listings).`,
  details: `Example: printf %s "$SECRET" | dpg hash-secret`,
  async run(args, io) {
    const { positionals } = parseFlags(args, {});
    if (positionals.length > 1 || (positionals[0] !== undefined && positionals[0] !== '-')) {
      throw new UsageError('hash-secret reads the secret from stdin, not from an argument (shell history keeps arguments)');
    }
    const secret = (await readInput('-', io)).replace(/\r?\n$/, '');
    if (!secret) throw new UsageError('an empty secret cannot be hashed');
    const { hashSecret } = await import('../../identity/secret-hash.ts');
    io.stdout.write(`${hashSecret(secret)}\n`);
    return 0;
  },
};
