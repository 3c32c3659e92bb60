// Loads config/gateway.yaml: every section checked (unknown keys are errors — a typo must not
// silently disable protection), defaults applied, relative paths resolved against the file's
// directory, then the DPG_* environment overrides. Problems carry file and line.

import { existsSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, isAbsolute, resolve } from 'node:path';
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { ConfigError, type ConfigProblem } from '../core/errors.ts';
import { readYamlFile, type YamlValue } from '../core/yaml-reader.ts';
import type {
  ApiKeyConfig,
  ClientConfig,
  GatewayConfig,
  GrpcConfig,
  HttpConfig,
  IdentityConfig,
  KeysConfig,
  AdminConfig,
  LimitsConfig,
  ListenAddress,
  LoggingConfig,
  ProxyConfig,
  ProxyRoute,
  PseudonymScopeConfig,
  ReverseListener,
  RouteMatch,
  RoutePhase,
  Scope,
  TlsFiles,
  TransparentConfig,
  WorkersConfig,
} from './types.ts';

export const DEFAULT_CONFIG_FILE = 'config/gateway.yaml';
/** The data directory's name beside the config file when DPG_DATA_DIR is not set. */
export const DEFAULT_DATA_DIR_NAME = '.dpg';
const SECTIONS = ['http', 'grpc', 'identity', 'keys', 'manifests', 'proxy', 'limits', 'logging', 'admin'] as const;
const MiB = 1024 * 1024;
const SCOPES: readonly Scope[] = ['protect', 'reconstruct', 'decrypt'];
/**
 * The worker pool's defaults (docs/operations.md, Workers). One worker per core but one (the event
 * loop keeps a core for the doors), at most two: each worker holds its own engine (~10 MB), and
 * the sidecar's footprint budget counts. inlineBytes is the weighted size (engine/offload.ts)
 * up to which a document is protected on the event loop: ~4 ms of Mask JSON on the reference machine.
 */
export function defaultWorkers(cores = availableParallelism()): WorkersConfig {
  return { max: Math.max(1, Math.min(2, cores - 1)), inlineBytes: 32 * 1024, timeoutMs: 120_000, idleMs: 30_000 };
}
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export interface LoadOptions {
  /** Config file; default DPG_CONFIG or config/gateway.yaml in the working directory. */
  readonly file?: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
}

export interface LoadResult {
  readonly config?: GatewayConfig;
  readonly problems: readonly ConfigProblem[];
}

/** Parses "host:port", "[v6]:port" or ":port" (host 127.0.0.1). */
export function parseListenAddress(text: string): ListenAddress | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s]*)):(\d{1,5})$/.exec(text.trim());
  if (!m) return undefined;
  const port = Number(m[3]);
  if (port > 65535) return undefined;
  return { host: m[1] ?? (m[2] || '127.0.0.1'), port };
}

/** DPG_TRANSPARENT_INSPECT (set per pod by the injector): `routed` or `all`; anything else is a problem. */
function envInspect(value: string | undefined, problems: ConfigProblem[]): TransparentConfig['inspect'] | undefined {
  if (value === undefined || value === '') return undefined;
  if (value === 'routed' || value === 'all') return value;
  problems.push({ file: 'environment DPG_TRANSPARENT_INSPECT', message: 'must be routed or all' });
  return undefined;
}

/**
 * The config file every command reads when none is named: DPG_CONFIG (an empty one counts as unset),
 * else config/gateway.yaml. `dpg serve` and `dpg capture` share it, so capture sees serve's routes.
 */
export function configFileOf(file?: string, env: NodeJS.ProcessEnv = process.env): string {
  return file ?? (env.DPG_CONFIG || DEFAULT_CONFIG_FILE);
}

export function loadConfig(options: LoadOptions = {}): LoadResult {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const file = resolve(cwd, configFileOf(options.file, env));
  const { root, sink } = readYamlFile(file);
  if (sink.problems.length > 0) return { problems: sink.problems };
  // DPG_CONFIG_BASE: relative paths resolve against it instead of the file's folder (an injected
  // pod mounts the config in /etc/dpg/config but keeps the paths of the /etc/dpg layout).
  const base = env.DPG_CONFIG_BASE ? resolve(cwd, env.DPG_CONFIG_BASE) : dirname(file);
  const envProblems: ConfigProblem[] = [];
  const r = new SectionReader(base, sink.problems);

  const top = root.present ? root.fields(SECTIONS) : undefined;
  if (!top) root.problem('the config file is empty');
  const sec = (name: (typeof SECTIONS)[number]): YamlValue | undefined => (top && top[name].present ? top[name] : undefined);

  /** An address variable: `host:port`, or (for listeners that can be turned off) `off`; undefined when unset. */
  const envListen = (name: string, example: string, offAllowed: boolean): ListenAddress | 'off' | undefined => {
    const v = env[name];
    if (v === undefined || v === '') return undefined;
    if (offAllowed && v.trim().toLowerCase() === 'off') return 'off';
    const addr = parseListenAddress(v);
    if (!addr) envProblems.push({ file: `environment ${name}`, message: `must be host:port (e.g. ${example})${offAllowed ? ' or off' : ''}` });
    return addr;
  };
  const envAddr = (name: string): ListenAddress | undefined => envListen(name, '127.0.0.1:8080', false) as ListenAddress | undefined;

  const dataDir = env.DPG_DATA_DIR ? resolve(cwd, env.DPG_DATA_DIR) : resolve(base, DEFAULT_DATA_DIR_NAME);
  const http = r.http(sec('http'), envAddr('DPG_HTTP_ADDR'));
  const grpc = r.grpc(sec('grpc'), envAddr('DPG_GRPC_ADDR'));
  const identity = r.identity(sec('identity'), dataDir);
  // DPG_KEYRING_FILE: an injected pod's keyring Secret as a file volume (src/k8s/template.ts); it
  // replaces the config's keyring source.
  const keys = keyringFileFromEnv(r.keys(sec('keys')), env.DPG_KEYRING_FILE, cwd, envProblems);
  const manifests = r.manifests(top?.manifests);
  // DPG_PROXY_ADDR=off: no forward listener (an injected pod in capture mode).
  const proxyEnv = envListen('DPG_PROXY_ADDR', '127.0.0.1:8080', true);
  const proxy = r.proxy(sec('proxy'), proxyEnv === 'off' ? undefined : proxyEnv, envAddr('DPG_TRANSPARENT_ADDR'), envInspect(env.DPG_TRANSPARENT_INSPECT, envProblems), proxyEnv === 'off');
  const limits = r.limits(sec('limits'));
  const logging = r.logging(sec('logging'), env.DPG_LOG_LEVEL);
  const admin = r.admin(sec('admin'), envListen('DPG_ADMIN_ADDR', '127.0.0.1:15020', true));

  const problems = [...sink.problems, ...envProblems];
  if (problems.length > 0 || !manifests) return { problems };
  return {
    config: { file, dataDir, http, grpc, identity, keys, manifests, proxy, limits, logging, ...(admin ? { admin } : {}) },
    problems: [],
  };
}

/** Loads or throws ConfigError listing every problem. */
/** `keys` with DPG_KEYRING_FILE (when set) as its file source; the config's defaultKey stays. */
function keyringFileFromEnv(keys: KeysConfig, value: string | undefined, cwd: string, problems: ConfigProblem[]): KeysConfig {
  if (value === undefined || value === '') return keys;
  const file = resolve(cwd, value);
  if (!existsSync(file)) problems.push({ file: 'environment DPG_KEYRING_FILE', message: `file not found: ${file}` });
  return { source: 'file', file, ...(keys.defaultKey ? { defaultKey: keys.defaultKey } : {}) };
}

export function loadConfigOrThrow(options: LoadOptions = {}): GatewayConfig {
  const { config, problems } = loadConfig(options);
  if (!config) throw new ConfigError(problems);
  return config;
}

/** Section readers: each returns a complete section with defaults, recording problems as it goes. */
class SectionReader {
  constructor(
    private readonly base: string,
    private readonly problems: ConfigProblem[],
  ) {}

  private addr(v: YamlValue, fallback: string): ListenAddress {
    if (!v.present) return parseListenAddress(fallback)!;
    const text = v.string();
    const addr = text === undefined ? undefined : parseListenAddress(text);
    if (text !== undefined && !addr) v.problem('must be host:port (e.g. 127.0.0.1:8080)');
    return addr ?? parseListenAddress(fallback)!;
  }

  private int(v: YamlValue, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
    if (!v.present) return fallback;
    return v.number({ integer: true, min, max }) ?? fallback;
  }

  private bool(v: YamlValue, fallback: boolean): boolean {
    if (!v.present) return fallback;
    return v.boolean() ?? fallback;
  }

  private str(v: YamlValue, fallback: string): string;
  private str(v: YamlValue): string | undefined;
  private str(v: YamlValue, fallback?: string): string | undefined {
    if (!v.present) return fallback;
    return v.string() ?? fallback;
  }

  /** A path that must exist (file or directory), resolved against the config file's folder. */
  private existingPath(v: YamlValue, kind: 'file' | 'directory'): string | undefined {
    const text = v.string();
    if (text === undefined) return undefined;
    const full = isAbsolute(text) ? text : resolve(this.base, text);
    if (!existsSync(full)) return v.problem(`${kind} not found: ${full}`);
    const isDir = statSync(full).isDirectory();
    if (kind === 'file' && isDir) return v.problem(`must be a file, not a directory: ${full}`);
    if (kind === 'directory' && !isDir) return v.problem(`must be a directory: ${full}`);
    return full;
  }

  http(v: YamlValue | undefined, envListen: ListenAddress | undefined): HttpConfig {
    const f = v?.fields(['enabled', 'listen', 'maxBodyBytes', 'maxFileBytes', 'requireTokenForFileProtect', 'shutdownGraceMs'] as const);
    return {
      enabled: f ? this.bool(f.enabled, true) : true,
      listen: envListen ?? (f ? this.addr(f.listen, '127.0.0.1:8080') : parseListenAddress('127.0.0.1:8080')!),
      maxBodyBytes: f ? this.int(f.maxBodyBytes, 10 * MiB, 1) : 10 * MiB,
      maxFileBytes: f ? this.int(f.maxFileBytes, 2048 * MiB, 1) : 2048 * MiB,
      requireTokenForFileProtect: f ? this.bool(f.requireTokenForFileProtect, true) : true,
      shutdownGraceMs: f ? this.int(f.shutdownGraceMs, 10_000, 0) : 10_000,
    };
  }

  grpc(v: YamlValue | undefined, envListen: ListenAddress | undefined): GrpcConfig {
    const f = v?.fields(['enabled', 'listen', 'maxMessageBytes', 'tls'] as const);
    let tls: TlsFiles | undefined;
    if (f?.tls.present) {
      const t = f.tls.fields(['cert', 'key', 'ca'] as const);
      const cert = t.cert.present ? this.existingPath(t.cert, 'file') : t.cert.problem('is required with tls');
      const key = t.key.present ? this.existingPath(t.key, 'file') : t.key.problem('is required with tls');
      const ca = t.ca.present ? this.existingPath(t.ca, 'file') : undefined;
      if (cert && key) tls = { cert, key, ...(ca ? { ca } : {}) };
    }
    return {
      enabled: f ? this.bool(f.enabled, true) : true,
      listen: envListen ?? (f ? this.addr(f.listen, '127.0.0.1:9090') : parseListenAddress('127.0.0.1:9090')!),
      maxMessageBytes: f ? this.int(f.maxMessageBytes, 64 * MiB, 1024) : 64 * MiB,
      ...(tls ? { tls } : {}),
    };
  }

  identity(v: YamlValue | undefined, dataDir: string): IdentityConfig {
    const f = v?.fields([
      'issuer',
      'audience',
      'tokenTtlSeconds',
      'signingKeyDir',
      'signingKeyRotationSeconds',
      'trustedJwksUrl',
      'apiKeys',
      'clients',
    ] as const);
    const apiKeys: ApiKeyConfig[] = [];
    const clients: ClientConfig[] = [];
    if (f?.apiKeys.present) {
      for (const item of f.apiKeys.items()) {
        const k = item.fields(['id', 'hash'] as const);
        const id = k.id.present ? k.id.string() : k.id.problem('is required');
        const hash = k.hash.present ? k.hash.string() : k.hash.problem('is required (see `dpg hash-secret`)');
        if (id && hash) apiKeys.push({ id, hash });
      }
    }
    if (f?.clients.present) {
      const ids = new Set<string>();
      for (const item of f.clients.items()) {
        const c = item.fields(['id', 'secretHash', 'scopes', 'manifests', 'pseudonymScope'] as const);
        const id = c.id.present ? c.id.string() : c.id.problem('is required');
        if (id && ids.has(id)) c.id.problem('is used by another client');
        if (id) ids.add(id);
        const secretHash = c.secretHash.present ? c.secretHash.string() : c.secretHash.problem('is required (see `dpg hash-secret`)');
        const scopes: Scope[] = [];
        if (!c.scopes.present) c.scopes.problem(`is required: a list of ${SCOPES.join(', ')}`);
        else
          for (const s of c.scopes.items()) {
            const text = s.string();
            if (text !== undefined && !SCOPES.includes(text as Scope)) s.problem(`must be one of ${SCOPES.join(', ')}`);
            else if (text !== undefined) scopes.push(text as Scope);
          }
        const manifests = c.manifests.present ? c.manifests.items().map((m) => m.string()).filter((m): m is string => !!m) : undefined;
        const pseudonymScope = c.pseudonymScope.present ? this.pseudonymScope(c.pseudonymScope) : undefined;
        if (id && secretHash) clients.push({ id, secretHash, scopes, ...(manifests ? { manifests } : {}), ...(pseudonymScope ? { pseudonymScope } : {}) });
      }
    }
    const signingKeyDir = f?.signingKeyDir.present ? f.signingKeyDir.string() : undefined;
    return {
      issuer: f ? this.str(f.issuer, 'dpg') : 'dpg',
      audience: f ? this.str(f.audience, 'dpg-api') : 'dpg-api',
      tokenTtlSeconds: f ? this.int(f.tokenTtlSeconds, 900, 30, 86_400) : 900,
      signingKeyDir: signingKeyDir ? resolve(this.base, signingKeyDir) : resolve(dataDir, 'identity'),
      signingKeyRotationSeconds: f ? this.int(f.signingKeyRotationSeconds, 7 * 86_400, 60) : 7 * 86_400,
      ...(f?.trustedJwksUrl.present ? { trustedJwksUrl: this.jwksUrl(f.trustedJwksUrl) } : {}),
      apiKeys,
      clients,
    };
  }

  /** A client's pseudonym scope values: id lists (0 = none given) or "*", and organizationWide. */
  private pseudonymScope(v: YamlValue): PseudonymScopeConfig {
    const f = v.fields(['thirdPartyIds', 'dataUsageIds', 'organizationWide'] as const);
    const ids = (x: YamlValue): readonly number[] | '*' => {
      if (!x.present) return [0];
      if (x.scalarValue() === '*') return '*';
      if (!x.isSeq()) return x.problem('must be a list of ids (0 = none given) or "*"') ?? [0];
      const list = x.items().map((i) => i.number({ integer: true, min: 0, max: 2147483647 }));
      return list.every((n) => n !== undefined) ? (list as number[]) : [0];
    };
    return {
      thirdPartyIds: ids(f.thirdPartyIds),
      dataUsageIds: ids(f.dataUsageIds),
      organizationWide: this.bool(f.organizationWide, false),
    };
  }

  /** Signing keys fetched in clear could be swapped on the way: https only (http on loopback for tests). */
  private jwksUrl(v: YamlValue): string | undefined {
    const text = v.string();
    if (text === undefined) return undefined;
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return v.problem('must be a URL');
    }
    const loopback = url.hostname === '127.0.0.1' || url.hostname === 'localhost' || url.hostname === '[::1]';
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) return v.problem('must be an https:// URL');
    return text;
  }

  keys(v: YamlValue | undefined): KeysConfig {
    if (!v) return { source: 'generated' };
    const f = v.fields(['source', 'file', 'env', 'defaultKey'] as const);
    const source = f.source.present ? f.source.string() : 'generated';
    const defaultKey = f.defaultKey.present ? f.defaultKey.string() : undefined;
    const extra = defaultKey ? { defaultKey } : {};
    if (source === 'file') {
      const file = f.file.present ? this.existingPath(f.file, 'file') : f.file.problem('is required when source is file');
      return { source: 'file', file: file ?? '', ...extra };
    }
    if (source === 'env') {
      const env = f.env.present ? f.env.string() : 'DPG_KEYRING';
      return { source: 'env', env: env ?? 'DPG_KEYRING', ...extra };
    }
    if (source !== 'generated' && source !== undefined) f.source.problem('must be generated, file or env');
    return { source: 'generated', ...extra };
  }

  /** `admin: { listen: host:port | off }`; absent or off: no admin listener. */
  admin(v: YamlValue | undefined, envListen: ListenAddress | 'off' | undefined): AdminConfig | undefined {
    const f = v?.fields(['listen'] as const);
    let listen: ListenAddress | undefined;
    // `false` counts as off too (a YAML 1.1 habit reads `off` as false).
    if (f?.listen.present && f.listen.scalarValue() !== false) {
      const text = f.listen.string();
      if (text !== undefined && text.trim().toLowerCase() !== 'off') {
        listen = parseListenAddress(text);
        if (!listen) f.listen.problem('must be host:port (e.g. 127.0.0.1:15020) or off');
      }
    }
    if (envListen === 'off') return undefined;
    listen = envListen ?? listen;
    return listen ? { listen } : undefined;
  }

  manifests(v: YamlValue | undefined): string | undefined {
    if (!v || !v.present) {
      const fallback = resolve(this.base, 'manifests');
      if (!existsSync(fallback)) this.problems.push({ file: fallback, message: 'manifest directory not found (set `manifests`)' });
      return fallback;
    }
    return this.existingPath(v, 'directory');
  }

  limits(v: YamlValue | undefined): LimitsConfig {
    const f = v?.fields(['maxDepth', 'maxRows', 'maxValueLength', 'maxDocumentBytes', 'workers'] as const);
    return {
      maxDepth: f ? this.int(f.maxDepth, 256, 1, 10_000) : 256,
      maxRows: f ? this.int(f.maxRows, 1_000_000, 1) : 1_000_000,
      maxValueLength: f ? this.int(f.maxValueLength, MiB, 1) : MiB,
      maxDocumentBytes: f ? this.int(f.maxDocumentBytes, 64 * MiB, 1) : 64 * MiB,
      workers: this.workers(f?.workers),
    };
  }

  /** limits.workers: the protection worker pool (docs/operations.md, Workers). */
  private workers(v: YamlValue | undefined): WorkersConfig {
    const d = defaultWorkers();
    const f = v?.present ? v.fields(['max', 'inlineBytes', 'timeoutMs', 'idleMs'] as const) : undefined;
    if (!f) return d;
    return {
      max: this.int(f.max, d.max, 0, 64),
      inlineBytes: this.int(f.inlineBytes, d.inlineBytes, 0),
      timeoutMs: this.int(f.timeoutMs, d.timeoutMs, 100),
      idleMs: this.int(f.idleMs, d.idleMs, 0),
    };
  }

  logging(v: YamlValue | undefined, envLevel: string | undefined): LoggingConfig {
    const f = v?.fields(['level'] as const);
    let level = f ? this.str(f.level, 'info') : 'info';
    if (f?.level.present && !LOG_LEVELS.includes(level)) {
      f.level.problem(`must be one of ${LOG_LEVELS.join(', ')}`);
      level = 'info';
    }
    if (envLevel && LOG_LEVELS.includes(envLevel)) level = envLevel;
    return { level };
  }

  proxy(v: YamlValue | undefined, envListen: ListenAddress | undefined, envTransparent?: ListenAddress, envInspect?: TransparentConfig['inspect'], envOff = false): ProxyConfig {
    const f = v?.fields([
      'enabled', 'listen', 'ca', 'upstreamCa', 'connectTimeoutMs', 'responseTimeoutMs',
      'idleTimeoutMs', 'maxConnections', 'routeHostsRefreshMs', 'routes', 'reverse', 'transparent',
    ] as const);
    let ca: ProxyConfig['ca'];
    if (f?.ca.present) {
      const c = f.ca.fields(['cert', 'key'] as const);
      const cert = c.cert.present ? this.existingPath(c.cert, 'file') : c.cert.problem('is required with ca');
      const key = c.key.present ? this.existingPath(c.key, 'file') : c.key.problem('is required with ca');
      if (cert && key) ca = { cert, key };
    }
    const routes: ProxyRoute[] = [];
    const names = new Set<string>();
    if (f?.routes.present) {
      for (const item of f.routes.items()) {
        const route = this.route(item);
        if (!route) continue;
        if (names.has(route.name)) item.problem(`route name ${route.name} is used twice`);
        names.add(route.name);
        routes.push(route);
      }
    }
    const reverse: ReverseListener[] = [];
    if (f?.reverse.present) {
      for (const item of f.reverse.items()) {
        const rv = item.fields(['listen', 'upstream'] as const);
        const listen = rv.listen.present ? this.addr(rv.listen, '127.0.0.1:0') : rv.listen.problem('is required');
        const upstream = rv.upstream.present ? rv.upstream.string() : rv.upstream.problem('is required');
        if (upstream !== undefined && !/^https?:\/\/[^/\s]+/.test(upstream)) rv.upstream.problem('must be an http:// or https:// URL');
        if (listen && upstream) reverse.push({ listen, upstream });
      }
    }
    const enabled = f ? this.bool(f.enabled, true) : true;
    const transparent = this.transparent(f?.transparent, envTransparent, envInspect);
    if (transparent && !enabled) (f?.transparent.present ? f.transparent : f!.enabled).problem('the transparent listener is part of the proxy: it needs proxy.enabled: true');
    // `listen: off` (a string; `false` where a YAML 1.1 reader made a boolean of it) or DPG_PROXY_ADDR=off.
    const listenOff = f?.listen.present === true && (f.listen.scalarValue() === 'off' || f.listen.scalarValue() === false);
    const off = envOff || (envListen === undefined && listenOff);
    return {
      enabled,
      listen: envListen ?? (f && !listenOff ? this.addr(f.listen, '127.0.0.1:15001') : parseListenAddress('127.0.0.1:15001')!),
      ...(off ? { forward: 'off' as const } : {}),
      ...(ca ? { ca } : {}),
      ...(f?.upstreamCa.present ? { upstreamCa: this.existingPath(f.upstreamCa, 'file') } : {}),
      connectTimeoutMs: f ? this.int(f.connectTimeoutMs, 10_000, 1) : 10_000,
      responseTimeoutMs: f ? this.int(f.responseTimeoutMs, 60_000, 1) : 60_000,
      idleTimeoutMs: f ? this.int(f.idleTimeoutMs, 120_000, 1) : 120_000,
      maxConnections: f ? this.int(f.maxConnections, 1024, 1) : 1024,
      routeHostsRefreshMs: f ? this.int(f.routeHostsRefreshMs, 60_000, 1000) : 60_000,
      routes,
      reverse,
      ...(transparent ? { transparent } : {}),
    };
  }

  /** `proxy.transparent`: on when the section is present (unless `enabled: false`) or DPG_TRANSPARENT_ADDR is set. */
  private transparent(v: YamlValue | undefined, envListen: ListenAddress | undefined, envInspect: TransparentConfig['inspect'] | undefined): TransparentConfig | undefined {
    const present = v?.present === true;
    const f = present ? v.fields(['enabled', 'listen', 'ipv6', 'peekTimeoutMs', 'encryptedClientHello', 'inspect'] as const) : undefined;
    const inspect = f?.inspect.present ? f.inspect.string() : 'routed';
    if (inspect !== 'routed' && inspect !== 'all') f?.inspect.problem('must be routed or all');
    const enabled = envListen !== undefined || (f ? this.bool(f.enabled, true) : false);
    const ech = f?.encryptedClientHello.present ? f.encryptedClientHello.string() : 'refuse';
    if (ech !== 'refuse' && ech !== 'splice') f?.encryptedClientHello.problem('must be refuse or splice');
    if (!enabled) return undefined;
    return {
      listen: envListen ?? (f ? this.addr(f.listen, '127.0.0.1:15006') : parseListenAddress('127.0.0.1:15006')!),
      ipv6: f ? this.bool(f.ipv6, true) : true,
      peekTimeoutMs: f ? this.int(f.peekTimeoutMs, 500, 1, 60_000) : 500,
      encryptedClientHello: ech === 'splice' ? 'splice' : 'refuse',
      inspect: envInspect ?? (inspect === 'all' ? 'all' : 'routed'),
    };
  }

  private route(v: YamlValue): ProxyRoute | undefined {
    const f = v.fields(['name', 'match', 'request', 'response', 'onError', 'otherContent', 'maxBodyBytes'] as const);
    const name = f.name.present ? f.name.string() : f.name.problem('is required');
    let match: RouteMatch = {};
    if (f.match.present) {
      const m = f.match.fields(['host', 'port', 'methods', 'path', 'pathMatch', 'contentType'] as const);
      const pathMatch = m.pathMatch.present ? m.pathMatch.string() : undefined;
      if (pathMatch !== undefined && pathMatch !== 'lenient' && pathMatch !== 'exact') m.pathMatch.problem('must be lenient or exact');
      match = {
        ...(m.host.present ? { host: m.host.string()?.toLowerCase() } : {}),
        ...(m.port.present ? { port: m.port.number({ integer: true, min: 1, max: 65535 }) } : {}),
        ...(m.methods.present ? { methods: m.methods.items().map((x) => x.string()?.toUpperCase()).filter((x): x is string => !!x) } : {}),
        ...(m.path.present ? { path: m.path.string() } : {}),
        ...(pathMatch === 'exact' || pathMatch === 'lenient' ? { pathMatch } : {}),
        ...(m.contentType.present ? { contentType: m.contentType.string()?.toLowerCase() } : {}),
      };
      if (match.host !== undefined && !validHostPattern(match.host)) m.host.problem('must be a host name, an IP address, *.name or *');
    } else f.match.problem('is required (an empty match would catch every request)');
    const request = f.request.present ? this.phase(f.request) : undefined;
    const response = f.response.present ? this.phase(f.response) : undefined;
    if (!f.request.present && !f.response.present) v.problem('needs a request or response phase');
    const onError = f.onError.present ? f.onError.string() : 'reject';
    if (onError !== 'reject' && onError !== 'passthrough') f.onError.problem('must be reject or passthrough');
    const otherContent = f.otherContent.present ? f.otherContent.string() : 'reject';
    if (otherContent !== 'reject' && otherContent !== 'passthrough') f.otherContent.problem('must be reject or passthrough');
    if (!name) return undefined;
    return {
      name,
      match,
      ...(request ? { request } : {}),
      ...(response ? { response } : {}),
      onError: onError === 'passthrough' ? 'passthrough' : 'reject',
      ...(otherContent === 'passthrough' ? { otherContent: 'passthrough' as const } : {}),
      maxBodyBytes: this.int(f.maxBodyBytes, 10 * MiB, 1),
    };
  }

  private phase(v: YamlValue): RoutePhase | undefined {
    const f = v.fields([
      'manifest',
      'jobType',
      'dataSetType',
      'countryCode',
      'dataOwningCountryCode',
      'thirdPartyId',
      'dataUsageId',
      'isDataConsistentAcrossOrganization',
      'protectNullValues',
      'preserveStringLength',
      'silentMode',
      'sqlDialect',
      'delimiter',
      'queryParams',
    ] as const);
    const manifest = f.manifest.present ? f.manifest.string() : f.manifest.problem('is required');
    const jobType = f.jobType.present ? f.jobType.string() : f.jobType.problem('is required');
    const opt = <T>(x: YamlValue, read: () => T | undefined) => (x.present ? read() : undefined);
    if (!manifest || !jobType) return undefined;
    const phase: Record<string, unknown> = { manifest, jobType };
    const set = (k: string, val: unknown) => {
      if (val !== undefined) phase[k] = val;
    };
    set('dataSetType', opt(f.dataSetType, () => f.dataSetType.string()));
    set('countryCode', opt(f.countryCode, () => f.countryCode.string()));
    set('dataOwningCountryCode', opt(f.dataOwningCountryCode, () => f.dataOwningCountryCode.string()));
    set('thirdPartyId', opt(f.thirdPartyId, () => f.thirdPartyId.number({ integer: true, min: 0 })));
    set('dataUsageId', opt(f.dataUsageId, () => f.dataUsageId.number({ integer: true, min: 0 })));
    set('isDataConsistentAcrossOrganization', opt(f.isDataConsistentAcrossOrganization, () => f.isDataConsistentAcrossOrganization.boolean()));
    set('protectNullValues', opt(f.protectNullValues, () => f.protectNullValues.boolean()));
    set('preserveStringLength', opt(f.preserveStringLength, () => f.preserveStringLength.boolean()));
    set('silentMode', opt(f.silentMode, () => f.silentMode.boolean()));
    set('sqlDialect', opt(f.sqlDialect, () => f.sqlDialect.string()));
    set(
      'delimiter',
      opt(f.delimiter, () => {
        const d = f.delimiter.string();
        if (d === undefined || LIST_DELIMITERS.includes(d)) return d;
        f.delimiter.problem('must be one of "," ";" "|" or a tab');
        return undefined;
      }),
    );
    set('queryParams', opt(f.queryParams, () => f.queryParams.items().map((x) => x.string()).filter((x): x is string => !!x)));
    return phase as unknown as RoutePhase;
  }
}

/** The delimiters a route may declare for LIST bodies (the ones the CSV reader knows). */
const LIST_DELIMITERS: readonly string[] = [',', ';', '|', '\t'];

/** A route host: `*`, `*.name`, a name or an IP literal the URL host parser accepts (the proxy canonicalises it). */
function validHostPattern(pattern: string): boolean {
  if (pattern === '*') return true;
  const host = pattern.startsWith('*.') ? pattern.slice(2) : pattern;
  if (/[\x00-\x20\x7f/\\?#@<>^|]/.test(host)) return false; // the URL host parser would cut there
  const bracketed = host.startsWith('[') && host.endsWith(']');
  if (bracketed || host.includes(':')) return !host.includes('%') && domainToASCII(bracketed ? host : `[${host}]`) !== '';
  const ascii = domainToASCII(host);
  return /^[a-z0-9_.-]+$/.test(ascii) && !(pattern.startsWith('*.') && isIP(ascii) !== 0);
}
