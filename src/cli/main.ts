// The `dpg` command: serve, protect, validate, hash-secret. Thin: parses flags, calls into the rest,
// prints results. Errors print code and our own detail only — never payload content.

import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ConfigError, DpgError, formatConfigProblem, toDpgError } from '../core/errors.ts';
import { loadConfig } from '../config/load.ts';
import { parseJobRequest } from '../engine/request.ts';
import { buildEngine, checkConfigReferences } from '../engine/build.ts';
import { createLogger } from '../core/logger.ts';

const USAGE = `dpg — data protection gateway

Usage:
  dpg serve [--config FILE]
      Runs the HTTP API, gRPC API, identity endpoint and egress proxy (config/gateway.yaml by default).
  dpg protect --manifest NAME --job JOBTYPE [--type JSON|XML|SQL|LIST] [--dialect D]
              [--country CC] [--owning-country CC] [--third-party N] [--data-usage N] [--org-wide]
              [--snapshot-date ISO] [--silent] [--protect-nulls] [--preserve-length]
              [--restricted-text TEXT] [--config FILE] [FILE|-]
      Protects a payload from FILE (or stdin) and writes the result to stdout.
  dpg validate [--config FILE]
      Checks the config, the keyring and every manifest; prints each problem with file and line.
  dpg hash-secret [-]
      Reads a client secret or API key from stdin and prints the hash to put in the config
      (never as an argument: arguments end up in shell history and process listings).
  dpg --help

Environment: DPG_CONFIG, DPG_DATA_DIR, DPG_HTTP_ADDR, DPG_GRPC_ADDR, DPG_PROXY_ADDR, DPG_LOG_LEVEL.
`;

export interface CliIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  readonly stdin: NodeJS.ReadableStream;
}

const defaultIo: CliIo = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin };

/** Runs one command; resolves to the process exit code. */
export async function main(argv: readonly string[], io: CliIo = defaultIo): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'serve':
        return await serveCommand(rest, io);
      case 'protect':
        return await protectCommand(rest, io);
      case 'validate':
        return validateCommand(rest, io);
      case 'hash-secret':
        return await hashSecretCommand(rest, io);
      case undefined:
      case '--help':
      case '-h':
      case 'help':
        io.stdout.write(USAGE);
        return command === undefined ? 2 : 0;
      default:
        io.stderr.write(`dpg: unknown command ${JSON.stringify(command.slice(0, 40))}\n\n${USAGE}`);
        return 2;
    }
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

class UsageError extends Error {}

type FlagSpec = Record<string, { type: 'string' | 'boolean'; short?: string }>;

function parse(args: readonly string[], options: FlagSpec) {
  try {
    return parseArgs({ args: [...args], options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message.split('\n')[0]);
  }
}

async function serveCommand(args: readonly string[], io: CliIo): Promise<number> {
  const { values } = parse(args, { config: { type: 'string' } });
  const { config, problems } = loadConfig({ file: values.config as string | undefined });
  if (!config) throw new ConfigError(problems);
  const logger = createLogger({ level: config.logging.level });
  // Loaded here only: protect/validate need none of the listeners.
  const { startGateway } = await import('../main.ts');
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
  void io;
  return new Promise<number>(() => undefined); // runs until a signal ends the process
}

async function readInput(file: string | undefined, io: CliIo): Promise<string> {
  if (file !== undefined && file !== '-') {
    try {
      return readFileSync(file, 'utf8');
    } catch (err) {
      throw new DpgError('INVALID_REQUEST', `Cannot read input file (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  const chunks: Buffer[] = [];
  for await (const chunk of io.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

async function protectCommand(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parse(args, {
    manifest: { type: 'string', short: 'm' },
    job: { type: 'string', short: 'j' },
    type: { type: 'string', short: 't' },
    dialect: { type: 'string' },
    country: { type: 'string' },
    'owning-country': { type: 'string' },
    'third-party': { type: 'string' },
    'data-usage': { type: 'string' },
    'org-wide': { type: 'boolean' },
    'snapshot-date': { type: 'string' },
    silent: { type: 'boolean' },
    'protect-nulls': { type: 'boolean' },
    'preserve-length': { type: 'boolean' },
    'restricted-text': { type: 'string' },
    config: { type: 'string' },
  });
  if (positionals.length > 1) throw new UsageError('protect takes at most one input file');
  const v = values as Record<string, string | boolean | undefined>;
  if (!v.manifest) throw new UsageError('--manifest is required');
  if (!v.job) throw new UsageError('--job is required');
  const job = parseJobRequest({
    manifestName: v.manifest,
    jobType: v.job,
    dataSetType: v.type ?? 'JSON',
    sqlDialect: v.dialect,
    countryCode: v.country,
    dataOwningCountryCode: v['owning-country'],
    thirdPartyId: v['third-party'],
    dataUsageId: v['data-usage'],
    isDataConsistentAcrossOrganization: v['org-wide'],
    snapshotDate: v['snapshot-date'],
    silentMode: v.silent,
    protectNullValues: v['protect-nulls'],
    preserveStringLength: v['preserve-length'],
    useRestrictedText: v['restricted-text'] !== undefined ? true : undefined,
    restrictedText: v['restricted-text'],
  });
  const { config, problems } = loadConfig({ file: v.config as string | undefined });
  if (!config) throw new ConfigError(problems);
  const { engine } = buildEngine(config);
  const input = await readInput(positionals[0], io);
  // Whole result first, then one write: an error leaves stdout empty rather than half-protected.
  const result = engine.protectDocument(job, input);
  const text = typeof result.dataSet === 'string' ? result.dataSet : JSON.stringify(result.dataSet);
  io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  if (result.summary.failed > 0) io.stderr.write(`dpg: ${result.summary.failed} value(s) replaced (silent mode)\n`);
  return 0;
}

function validateCommand(args: readonly string[], io: CliIo): number {
  const { values } = parse(args, { config: { type: 'string' } });
  const { config, problems } = loadConfig({ file: values.config as string | undefined });
  if (!config) throw new ConfigError(problems);
  let engine;
  try {
    engine = buildEngine(config).engine;
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw err;
  }
  const refs = checkConfigReferences(config, engine);
  if (refs.length > 0) throw new ConfigError(refs);
  io.stdout.write(`config ${config.file}: ok\n`);
  for (const name of engine.manifestNames()) {
    io.stdout.write(`${engine.manifest(name)!.explain().join('\n')}\n`);
  }
  return 0;
}

async function hashSecretCommand(args: readonly string[], io: CliIo): Promise<number> {
  const { positionals } = parse(args, {});
  if (positionals.length > 1 || (positionals[0] !== undefined && positionals[0] !== '-')) {
    throw new UsageError('hash-secret reads the secret from stdin, not from an argument (shell history keeps arguments)');
  }
  const secret = (await readInput('-', io)).replace(/\r?\n$/, '');
  if (!secret) throw new UsageError('an empty secret cannot be hashed');
  const { hashSecret } = await import('../identity/secret-hash.ts');
  io.stdout.write(`${hashSecret(secret)}\n`);
  return 0;
}
