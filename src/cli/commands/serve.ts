// `dpg serve`: every listener of the config in one process, until SIGTERM/SIGINT; SIGHUP reloads manifests.

import { ConfigError, toDpgError } from '../../core/errors.ts';
import { loadConfig } from '../../config/load.ts';
import { createLogger } from '../../core/logger.ts';
import { parseFlags, type Command } from '../command.ts';

export const serveCommand: Command = {
  name: 'serve',
  summary: 'run the HTTP API, gRPC API, identity endpoint and egress proxy',
  usage: `dpg serve [--config FILE]
    Runs the HTTP API, gRPC API, identity endpoint and egress proxy (config/gateway.yaml by default).`,
  async run(args) {
    const { values } = parseFlags(args, { config: { type: 'string' } });
    const { config, problems } = loadConfig({ file: values.config as string | undefined });
    if (!config) throw new ConfigError(problems);
    const logger = createLogger({ level: config.logging.level });
    // Loaded here only: protect/validate need none of the listeners.
    const { startGateway } = await import('../../main.ts');
    const gateway = await startGateway(config, { logger });
    const stop = (signal: string) => {
      logger.info({ signal }, 'shutting down');
      gateway.close().then(
        () => process.exit(0),
        (err: unknown) => {
          logger.error({ err: toDpgError(err).code }, 'shutdown failed');
          process.exit(1);
        },
      );
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
    process.on('SIGHUP', () => gateway.reload());
    return new Promise<number>(() => undefined); // runs until a signal ends the process
  },
};
