// Every `dpg` subcommand, in the order `dpg --help` lists them. Adding one is its file in commands/
// and one line here (the build bundles whatever this file reaches; keep heavy imports inside run()).

import type { Command } from './command.ts';
import { serveCommand } from './commands/serve.ts';
import { protectCommand } from './commands/protect.ts';
import { validateCommand } from './commands/validate.ts';
import { hashSecretCommand } from './commands/hash-secret.ts';
import { probeCommand } from './commands/probe.ts';
import { injectCommand } from './commands/inject.ts';
import { webhookCommand } from './commands/webhook.ts';
import { captureCommand } from './commands/capture.ts';
import { caCommand } from './commands/ca.ts';

export const COMMANDS: readonly Command[] = [
  serveCommand,
  protectCommand,
  validateCommand,
  hashSecretCommand,
  probeCommand,
  injectCommand,
  webhookCommand,
  captureCommand,
  caCommand,
];
