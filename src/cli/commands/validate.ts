// `dpg validate`: loads the config, the keyring and every manifest; any problem is printed with file:line.

import { ConfigError } from '../../core/errors.ts';
import { parseFlags, type Command, type FlagSpec } from '../command.ts';

const options = {
  config: { type: 'string', short: 'c', value: 'FILE', help: 'gateway config (default DPG_CONFIG, else config/gateway.yaml)' },
} satisfies FlagSpec;

export const validateCommand: Command = {
  name: 'validate',
  summary: 'check the config, the keyring and every manifest',
  usage: `dpg validate [--config FILE]
    Checks the config, the keyring and every manifest; prints each problem with file and line
    and exits 1, or prints the config, the data directory and what each manifest does.`,
  options,
  async run(args, io) {
    const { values } = parseFlags(args, options);
    const [{ loadConfig }, { buildEngine, checkConfigReferences }] = await Promise.all([import('../../config/load.ts'), import('../../engine/build.ts')]);
    const { config, problems } = loadConfig({ file: values.config });
    if (!config) throw new ConfigError(problems);
    const { engine } = buildEngine(config, undefined, {
      onKeyringCreated: (path) => io.stderr.write(`dpg: generated a development keyring at ${path}\n`),
    });
    const refs = checkConfigReferences(config, engine);
    if (refs.length > 0) throw new ConfigError(refs);
    io.stdout.write(`config ${config.file}: ok\ndata directory ${config.dataDir}\n`);
    for (const name of engine.manifestNames()) {
      io.stdout.write(`${engine.manifest(name)!.explain().join('\n')}\n`);
    }
    return 0;
  },
};
