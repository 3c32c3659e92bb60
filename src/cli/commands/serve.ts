// `dpg serve`: every listener of the config in one process, until SIGTERM/SIGINT; SIGHUP (and a change
// of the config's files) reloads the configuration (src/reload/reloader.ts).

import { ConfigError, toDpgError } from '../../core/errors.ts';
import { growYoungGenerationInOneStep, keepRequestGarbageYoung } from '../../core/young-garbage.ts';
import { parseFlags, type Command, type FlagSpec } from '../command.ts';

const options = {
  config: { type: 'string', short: 'c', value: 'FILE', help: 'gateway config (default DPG_CONFIG, else config/gateway.yaml)' },
} satisfies FlagSpec;

export const serveCommand: Command = {
  name: 'serve',
  summary: 'run the HTTP API, gRPC API, identity endpoint and egress proxy',
  usage: `dpg serve [--config FILE]
    Runs every listener the config turns on: HTTP API and identity endpoint, gRPC API, egress
    proxy (config/gateway.yaml by default). Stops on SIGTERM or SIGINT after in-flight requests;
    SIGHUP, or a change of the config file, manifests, keyring file or CA files, reloads the
    configuration (a bad one is refused and logged; docs/operations.md, Reload and key rotation).`,
  options,
  details: `The sidecar profile (config/sidecar.yaml) turns the HTTP and gRPC APIs off
(http.enabled: false, grpc.enabled: false) and serves GET /metrics, /healthz and /readyz on its
admin listener (admin.listen, DPG_ADMIN_ADDR; 127.0.0.1:15020); without one the proxy listener
answers /healthz and /readyz for dpg probe. The start-up log names the keyring's fingerprint.
A start-up failure (bad config, address in use, unreadable file, demo credentials or a generated
keyring under NODE_ENV=production) is printed with its cause and exits 1.`,
  async run(args) {
    const { values } = parseFlags(args, options);
    keepRequestGarbageYoung();
    // Loaded here only: the other commands need none of the listeners.
    const [{ loadConfig }, { createLogger }, { startGateway }] = await Promise.all([
      import('../../config/load.ts'),
      import('../../core/logger.ts'),
      import('../../main.ts'),
    ]);
    const { config, problems } = loadConfig({ file: values.config });
    if (!config) throw new ConfigError(problems);
    const logger = createLogger({ level: config.logging.level, bufferBytes: config.logging.bufferBytes });
    const gateway = await startGateway(config, { logger });
    growYoungGenerationInOneStep();
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
    process.on('SIGHUP', () => void gateway.reload());
    return new Promise<number>(() => undefined); // runs until a signal ends the process
  },
};
