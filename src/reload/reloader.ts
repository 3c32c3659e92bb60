// Live reconfiguration: SIGHUP or a change of any file the configuration is made of loads a whole
// new configuration (config file, manifests, keyring, CA files), checks it in full, and swaps it in
// between requests. Anything wrong: the problems are logged (file, line, path; never a value) and
// counted, and the configuration in force stays. A request runs under the generation it started in.

import { ConfigError, toDpgError, type ConfigProblem } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import type { Metrics } from '../core/metrics.ts';
import type { GatewayConfig } from '../config/types.ts';
import type { ProtectionEngine } from '../engine/engine.ts';
import type { Keyring } from '../crypto/keyring.ts';
import { effectiveConfig } from './restart-only.ts';
import { ConfigGeneration } from './generation.ts';
import { watchInputs, type InputWatcher, type WatchedInput } from './watch-inputs.ts';

/** What a reload swaps besides the generation: the proxy's routes, reverse listeners and CA. */
export interface ReconfigurableDoor {
  /**
   * Prepares the door for `generation` (may fail: nothing changes then) and calls `commit` in the
   * same synchronous step as its own swap, so no request sees one without the other.
   */
  reconfigure(generation: ConfigGeneration, commit: () => void): Promise<void>;
}

export interface ReloaderDeps {
  readonly first: ConfigGeneration;
  /** Reads the config file again (loadConfig with the start's file). */
  readonly load: () => { config?: GatewayConfig; problems: readonly ConfigProblem[] };
  /** Builds and cross-checks the engine for a config; throws ConfigError (or another error) when it cannot. */
  readonly build: (config: GatewayConfig) => { engine: ProtectionEngine; keyring: Keyring };
  /** Tells the new keyring's fingerprint to logs and metrics (it may be the same). */
  readonly onKeyring: (keyring: Keyring) => void;
  readonly door?: ReconfigurableDoor;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Quiet time after the last file event before reloading. */
  readonly debounceMs?: number;
}

export interface Reloader {
  /** The generation new requests run under. */
  current(): ConfigGeneration;
  /** Loads, checks and swaps in the configuration; resolves true when it took effect. */
  reload(trigger: string): Promise<boolean>;
  close(): void;
}

/** The files to watch for a config: the file itself, manifests (a directory), keyring and CA files. */
export function inputsOf(config: GatewayConfig): WatchedInput[] {
  const inputs: WatchedInput[] = [
    { path: config.file, kind: 'file' },
    { path: config.manifests, kind: 'dir' },
  ];
  if (config.keys.source === 'file') inputs.push({ path: config.keys.file, kind: 'file' });
  if (config.proxy.enabled && config.proxy.ca) inputs.push({ path: config.proxy.ca.cert, kind: 'file' }, { path: config.proxy.ca.key, kind: 'file' });
  if (config.proxy.enabled && config.proxy.upstreamCa) inputs.push({ path: config.proxy.upstreamCa, kind: 'file' });
  return inputs;
}

export function startReloader(deps: ReloaderDeps): Reloader {
  const { logger, metrics } = deps;
  let generation = deps.first;
  metrics.setConfigGeneration(generation.id, new Date());
  let running: Promise<boolean> | undefined;
  let again = false;
  let closed = false;
  let watched = '';
  let watcher: InputWatcher | undefined;

  const rewatch = (config: GatewayConfig): void => {
    const inputs = inputsOf(config);
    const key = JSON.stringify(inputs);
    if (key === watched || closed) return;
    watcher?.close();
    watched = key;
    watcher = watchInputs(inputs, () => void reload('file change'), { debounceMs: deps.debounceMs ?? 250, logger });
  };

  const refuse = (trigger: string, problems: readonly ConfigProblem[]): false => {
    metrics.observeReload('failure');
    // Problems name where and what; their messages never carry a config value or key material.
    logger.error(
      { trigger, generation: generation.id, problems: problems.map((p) => `${p.file}${p.line ? `:${p.line}` : ''}${p.path ? ` ${p.path}` : ''}: ${p.message}`) },
      'config reload refused; the configuration in force stays',
    );
    return false;
  };

  const attempt = async (trigger: string): Promise<boolean> => {
    const loaded = deps.load();
    if (!loaded.config) return refuse(trigger, loaded.problems);
    const { config, restartNeeded } = effectiveConfig(generation.config, loaded.config);
    let built: { engine: ProtectionEngine; keyring: Keyring };
    try {
      built = deps.build(config);
    } catch (err) {
      return refuse(trigger, problemsOf(err, config.file));
    }
    const next = new ConfigGeneration(generation.id + 1, config, built.engine);
    const previous = generation;
    const commit = (): void => {
      generation = next;
    };
    try {
      if (deps.door) await deps.door.reconfigure(next, commit);
      else commit();
    } catch (err) {
      built.engine.close().catch(() => undefined);
      return refuse(trigger, problemsOf(err, config.file));
    }
    metrics.observeReload('success');
    metrics.setConfigGeneration(next.id, new Date());
    deps.onKeyring(built.keyring);
    if (restartNeeded.length > 0) logger.warn({ settings: restartNeeded }, 'config reload: these settings changed but take effect only after a restart; the running values stay');
    logger.info({ trigger, generation: next.id, manifests: next.engine.manifestNames() }, 'config reloaded');
    rewatch(config);
    // Closing the old engine stops its workers once its last request ends; a failure there must not
    // become an unhandled rejection (which ends the process), only a log line.
    previous.retire().catch((err: unknown) => logger.warn({ generation: previous.id, error: (err as Error)?.name ?? typeof err }, 'config reload: closing the previous engine failed'));
    return true;
  };

  // One reload at a time; changes arriving meanwhile make one more, with the files as they are then.
  const reload = (trigger: string): Promise<boolean> => {
    if (closed) return Promise.resolve(false);
    if (running) {
      again = true;
      return running;
    }
    running = attempt(trigger)
      .catch((err: unknown) => refuse(trigger, problemsOf(err, generation.config.file)))
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          void reload(trigger);
        }
      });
    return running;
  };

  rewatch(generation.config);
  return {
    current: () => generation,
    reload,
    close() {
      closed = true;
      watcher?.close();
    },
  };
}

/** An error as config problems: ConfigError keeps its own; others give their catalogue message only. */
function problemsOf(err: unknown, file: string): readonly ConfigProblem[] {
  if (err instanceof ConfigError) return err.problems;
  const sys = err as NodeJS.ErrnoException;
  if (typeof sys?.code === 'string' && typeof sys.path === 'string') return [{ file: sys.path, message: `cannot be read (${sys.code})` }];
  const e = toDpgError(err);
  return [{ file, message: e.code === 'INTERNAL' && err instanceof Error && isOwnMessage(err) ? err.message : e.message }];
}

/** Start-up style errors of our own (door names, file paths, never values) are safe to log as they are. */
function isOwnMessage(err: Error): boolean {
  return err.name === 'StartupError' || err.message.startsWith('proxy.');
}
