// Loads config/gateway.yaml: checked against schema/gateway.schema.json (unknown keys are errors — a
// typo must not silently disable protection; types, ranges and allowed values), defaults taken from
// the schema, then what a schema cannot say checked here (files that must exist, names used twice,
// host patterns, the token key URL), relative paths resolved against the file's directory, and the
// DPG_* environment overrides. Problems carry file and line.

import { existsSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, isAbsolute, resolve } from 'node:path';
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { ConfigError, type ConfigProblem } from '../core/errors.ts';
import { readYamlFile, YamlValue } from '../core/yaml-reader.ts';
import { checkAgainstSchema, pathText, plainForSchema, walk } from '../core/schema-problems.ts';
import validateGateway, { schema as gatewaySchema } from './gateway-schema.generated.js';
import { DEFAULT_OVERLOAD } from '../core/overload.ts';
import type {
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
  OverloadConfig,
  ProxyConfig,
  ProxyRoute,
  RouteGrpc,
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
/**
 * The worker pool's defaults (docs/operations.md, Workers). One worker per core but one (the event
 * loop keeps a core for the doors), at most two: each worker holds its own engine (~10 MB), and
 * the sidecar's footprint budget counts. inlineBytes is the weighted size (engine/offload.ts)
 * up to which a document is protected on the event loop: ~4 ms of Mask JSON on the reference machine.
 */
export function defaultWorkers(cores = availableParallelism()): WorkersConfig {
  return { max: Math.max(1, Math.min(2, cores - 1)), inlineBytes: 32 * 1024, timeoutMs: 120_000, idleMs: 30_000, nice: 10 };
}
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
/** A mapping of the config as the schema left it (defaults filled in); values of a bad file may have any type. */
type Raw = Record<string, unknown>;

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
  if (!root.present) {
    root.problem('the config file is empty');
    return { problems: sink.problems };
  }
  const data = plainForSchema(root.node);
  const flagged = checkAgainstSchema(validateGateway, gatewaySchema, data, root.node, sink);
  if (!isRaw(data)) return { problems: sink.problems };
  // DPG_CONFIG_BASE: relative paths resolve against it instead of the file's folder (an injected
  // pod mounts the config in /etc/dpg/config but keeps the paths of the /etc/dpg layout).
  const base = env.DPG_CONFIG_BASE ? resolve(cwd, env.DPG_CONFIG_BASE) : dirname(file);
  const envProblems: ConfigProblem[] = [];
  const r = new SectionReader(base, root, flagged);

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
  const http = r.http(raw(data.http), envAddr('DPG_HTTP_ADDR'));
  const grpc = r.grpc(raw(data.grpc), envAddr('DPG_GRPC_ADDR'));
  const identity = r.identity(raw(data.identity), dataDir);
  // DPG_KEYRING_FILE: an injected pod's keyring Secret as a file volume (src/k8s/template.ts); it
  // replaces the config's keyring source.
  const keys = keyringFileFromEnv(r.keys(raw(data.keys)), env.DPG_KEYRING_FILE, cwd, envProblems);
  const manifests = r.manifests(data.manifests);
  // DPG_PROXY_ADDR=off: no forward listener (an injected pod in capture mode).
  const proxyEnv = envListen('DPG_PROXY_ADDR', '127.0.0.1:8080', true);
  const proxy = r.proxy(raw(data.proxy), proxyEnv === 'off' ? undefined : proxyEnv, envAddr('DPG_TRANSPARENT_ADDR'), envInspect(env.DPG_TRANSPARENT_INSPECT, envProblems), proxyEnv === 'off');
  const limits = r.limits(raw(data.limits));
  const logging = r.logging(raw(data.logging), env.DPG_LOG_LEVEL);
  const admin = r.admin(data.admin === undefined ? undefined : raw(data.admin), envListen('DPG_ADMIN_ADDR', '127.0.0.1:15020', true));

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

function isRaw(v: unknown): v is Raw {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** A mapping, or an empty one where the file had something else (already reported by the schema). */
function raw(v: unknown): Raw {
  return isRaw(v) ? v : {};
}

function list(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

function text(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/** A listen address the schema checked; the fallback only stands in for a bad one (the file is refused then). */
function addr(v: unknown, fallback: string): ListenAddress {
  return (typeof v === 'string' ? parseListenAddress(v) : undefined) ?? parseListenAddress(fallback)!;
}

function int(v: unknown, fallback: number): number {
  return typeof v === 'number' ? v : fallback;
}

function bool(v: unknown, fallback: boolean): boolean {
  return typeof v === 'boolean' ? v : fallback;
}

/**
 * Section readers: the schema has checked shapes and filled in defaults; these build the typed
 * config and check what it cannot say, each problem at the line of its key's value.
 */
class SectionReader {
  constructor(
    private readonly base: string,
    private readonly root: YamlValue,
    /** Paths the schema already found wrong: not checked again. */
    private readonly flagged: ReadonlySet<string>,
  ) {}

  /** The YAML value at a path, for a problem with its line. */
  private at(...segments: (string | number)[]): YamlValue {
    const parts = segments.map(String);
    return new YamlValue(walk(this.root.node, parts).node, pathText(parts), this.root.sink);
  }

  /** A path that must exist (file or directory), resolved against the config file's folder. */
  private existingPath(value: unknown, kind: 'file' | 'directory', ...segments: (string | number)[]): string | undefined {
    const given = text(value);
    if (given === undefined || this.flagged.has(pathText(segments.map(String)))) return undefined;
    const full = isAbsolute(given) ? given : resolve(this.base, given);
    const v = this.at(...segments);
    if (!existsSync(full)) return v.problem(`${kind} not found: ${full}`);
    const isDir = statSync(full).isDirectory();
    if (kind === 'file' && isDir) return v.problem(`must be a file, not a directory: ${full}`);
    if (kind === 'directory' && !isDir) return v.problem(`must be a directory: ${full}`);
    return full;
  }

  http(f: Raw, envListen: ListenAddress | undefined): HttpConfig {
    return {
      enabled: bool(f.enabled, true),
      listen: envListen ?? addr(f.listen, '127.0.0.1:8080'),
      maxBodyBytes: int(f.maxBodyBytes, 0),
      maxFileBytes: int(f.maxFileBytes, 0),
      requireTokenForFileProtect: bool(f.requireTokenForFileProtect, true),
      shutdownGraceMs: int(f.shutdownGraceMs, 0),
    };
  }

  grpc(f: Raw, envListen: ListenAddress | undefined): GrpcConfig {
    let tls: TlsFiles | undefined;
    if (isRaw(f.tls)) {
      const cert = this.existingPath(f.tls.cert, 'file', 'grpc', 'tls', 'cert');
      const key = this.existingPath(f.tls.key, 'file', 'grpc', 'tls', 'key');
      const ca = f.tls.ca === undefined ? undefined : this.existingPath(f.tls.ca, 'file', 'grpc', 'tls', 'ca');
      if (cert && key) tls = { cert, key, ...(ca ? { ca } : {}) };
    }
    return {
      enabled: bool(f.enabled, true),
      listen: envListen ?? addr(f.listen, '127.0.0.1:9090'),
      maxMessageBytes: int(f.maxMessageBytes, 0),
      ...(tls ? { tls } : {}),
    };
  }

  identity(f: Raw, dataDir: string): IdentityConfig {
    const apiKeys = list(f.apiKeys).filter(isRaw).flatMap((k) => (typeof k.id === 'string' && typeof k.hash === 'string' ? [{ id: k.id, hash: k.hash }] : []));
    const clients: ClientConfig[] = [];
    const ids = new Set<string>();
    list(f.clients).forEach((item, i) => {
      if (!isRaw(item)) return;
      const id = text(item.id);
      if (id !== undefined && ids.has(id)) this.at('identity', 'clients', i, 'id').problem('is used by another client');
      if (id !== undefined) ids.add(id);
      const secretHash = text(item.secretHash);
      const scopes = list(item.scopes).filter((s): s is Scope => typeof s === 'string') as Scope[];
      const manifests = item.manifests === undefined ? undefined : list(item.manifests).filter((m): m is string => typeof m === 'string' && m !== '');
      const pseudonymScope = isRaw(item.pseudonymScope) ? pseudonymScopeOf(item.pseudonymScope) : undefined;
      if (id && secretHash) clients.push({ id, secretHash, scopes, ...(manifests ? { manifests } : {}), ...(pseudonymScope ? { pseudonymScope } : {}) });
    });
    const signingKeyDir = text(f.signingKeyDir);
    const jwks = f.trustedJwksUrl === undefined ? undefined : this.jwksUrl(f.trustedJwksUrl);
    return {
      issuer: text(f.issuer) ?? 'dpg',
      audience: text(f.audience) ?? 'dpg-api',
      tokenTtlSeconds: int(f.tokenTtlSeconds, 0),
      signingKeyDir: signingKeyDir ? resolve(this.base, signingKeyDir) : resolve(dataDir, 'identity'),
      signingKeyRotationSeconds: int(f.signingKeyRotationSeconds, 0),
      ...(f.trustedJwksUrl !== undefined ? { trustedJwksUrl: jwks } : {}),
      apiKeys,
      clients,
    };
  }

  /** Signing keys fetched in clear could be swapped on the way: https only (http on loopback for tests). */
  private jwksUrl(value: unknown): string | undefined {
    const given = text(value);
    if (given === undefined) return undefined;
    const v = this.at('identity', 'trustedJwksUrl');
    let url: URL;
    try {
      url = new URL(given);
    } catch {
      return v.problem('must be a URL');
    }
    const loopback = url.hostname === '127.0.0.1' || url.hostname === 'localhost' || url.hostname === '[::1]';
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) return v.problem('must be an https:// URL');
    return given;
  }

  keys(f: Raw): KeysConfig {
    const defaultKey = text(f.defaultKey);
    const extra = defaultKey ? { defaultKey } : {};
    if (f.source === 'file') return { source: 'file', file: this.existingPath(f.file, 'file', 'keys', 'file') ?? '', ...extra };
    if (f.source === 'env') return { source: 'env', env: text(f.env) ?? 'DPG_KEYRING', ...extra };
    return { source: 'generated', ...extra };
  }

  /** `admin: { listen: host:port | off }`; absent or off: no admin listener. */
  admin(f: Raw | undefined, envListen: ListenAddress | 'off' | undefined): AdminConfig | undefined {
    // `false` counts as off too (a YAML 1.1 habit reads `off` as false).
    const given = text(f?.listen);
    const listen = given !== undefined && given.trim().toLowerCase() !== 'off' ? parseListenAddress(given) : undefined;
    if (envListen === 'off') return undefined;
    const chosen = envListen ?? listen;
    return chosen ? { listen: chosen } : undefined;
  }

  manifests(value: unknown): string | undefined {
    if (!walk(this.root.node, ['manifests']).keyNode) {
      const fallback = resolve(this.base, 'manifests');
      if (!existsSync(fallback)) this.root.sink.problems.push({ file: fallback, message: 'manifest directory not found (set `manifests`)' });
      return fallback;
    }
    return this.existingPath(value, 'directory', 'manifests');
  }

  limits(f: Raw): LimitsConfig {
    return {
      maxDepth: int(f.maxDepth, 0),
      maxRows: int(f.maxRows, 0),
      maxValueLength: int(f.maxValueLength, 0),
      maxDocumentBytes: int(f.maxDocumentBytes, 0),
      workers: workersOf(f.workers),
      overload: overloadOf(f.overload),
    };
  }

  logging(f: Raw, envLevel: string | undefined): LoggingConfig {
    let level = text(f.level) ?? 'info';
    if (envLevel && LOG_LEVELS.includes(envLevel)) level = envLevel;
    return { level, bufferBytes: int(f.bufferBytes, 8 * 1024 * 1024) };
  }

  proxy(f: Raw, envListen: ListenAddress | undefined, envTransparent?: ListenAddress, envInspect?: TransparentConfig['inspect'], envOff = false): ProxyConfig {
    let ca: ProxyConfig['ca'];
    if (isRaw(f.ca)) {
      const cert = this.existingPath(f.ca.cert, 'file', 'proxy', 'ca', 'cert');
      const key = this.existingPath(f.ca.key, 'file', 'proxy', 'ca', 'key');
      if (cert && key) ca = { cert, key };
    }
    const routes: ProxyRoute[] = [];
    const names = new Set<string>();
    list(f.routes).forEach((item, i) => {
      if (!isRaw(item)) return;
      const route = this.route(item, i);
      if (!route) return;
      if (names.has(route.name)) this.at('proxy', 'routes', i).problem(`route name ${route.name} is used twice`);
      names.add(route.name);
      routes.push(route);
    });
    const reverse: ReverseListener[] = list(f.reverse)
      .filter(isRaw)
      .flatMap((rv) => (typeof rv.listen === 'string' && typeof rv.upstream === 'string' ? [{ listen: addr(rv.listen, '127.0.0.1:0'), upstream: rv.upstream }] : []));
    const enabled = bool(f.enabled, true);
    const transparent = this.transparent(f.transparent, envTransparent, envInspect);
    if (transparent && !enabled) this.at('proxy', f.transparent !== undefined ? 'transparent' : 'enabled').problem('the transparent listener is part of the proxy: it needs proxy.enabled: true');
    // `listen: off` (a string; `false` where a YAML 1.1 reader made a boolean of it) or DPG_PROXY_ADDR=off.
    const listenOff = f.listen === false || (typeof f.listen === 'string' && f.listen.trim().toLowerCase() === 'off');
    const off = envOff || (envListen === undefined && listenOff);
    return {
      enabled,
      listen: envListen ?? (listenOff ? parseListenAddress('127.0.0.1:15001')! : addr(f.listen, '127.0.0.1:15001')),
      ...(off ? { forward: 'off' as const } : {}),
      ...(ca ? { ca } : {}),
      ...(f.upstreamCa !== undefined ? { upstreamCa: this.existingPath(f.upstreamCa, 'file', 'proxy', 'upstreamCa') } : {}),
      connectTimeoutMs: int(f.connectTimeoutMs, 0),
      responseTimeoutMs: int(f.responseTimeoutMs, 0),
      idleTimeoutMs: int(f.idleTimeoutMs, 0),
      maxConnections: int(f.maxConnections, 0),
      routeHostsRefreshMs: int(f.routeHostsRefreshMs, 0),
      routes,
      reverse,
      ...(transparent ? { transparent } : {}),
    };
  }

  /** `proxy.transparent`: on when the section is present (unless `enabled: false`) or DPG_TRANSPARENT_ADDR is set. */
  private transparent(value: unknown, envListen: ListenAddress | undefined, envInspect: TransparentConfig['inspect'] | undefined): TransparentConfig | undefined {
    const f = isRaw(value) ? value : undefined;
    const enabled = envListen !== undefined || (f ? bool(f.enabled, true) : false);
    if (!enabled) return undefined;
    return {
      listen: envListen ?? addr(f?.listen, '127.0.0.1:15006'),
      ipv6: bool(f?.ipv6, true),
      peekTimeoutMs: int(f?.peekTimeoutMs, 500),
      encryptedClientHello: f?.encryptedClientHello === 'splice' ? 'splice' : 'refuse',
      inspect: envInspect ?? (f?.inspect === 'all' ? 'all' : 'routed'),
    };
  }

  /** A route's `grpc` block: its files must exist (their content is read when the routes are compiled). */
  private routeGrpc(f: Raw, i: number): RouteGrpc | undefined {
    const at = (...rest: (string | number)[]) => ['proxy', 'routes', i, 'grpc', ...rest];
    if (f.protoFiles !== undefined && f.descriptorSet !== undefined) {
      this.at(...at('descriptorSet')).problem('give protoFiles or descriptorSet, not both');
      return undefined;
    }
    if (f.descriptorSet !== undefined) {
      if (f.includeDirs !== undefined) this.at(...at('includeDirs')).problem('is for protoFiles; a descriptor set holds its imports');
      const descriptorSet = this.existingPath(f.descriptorSet, 'file', ...at('descriptorSet'));
      return descriptorSet === undefined ? undefined : { descriptorSet };
    }
    const protoFiles = list(f.protoFiles).map((p, k) => this.existingPath(p, 'file', ...at('protoFiles', k)));
    const includeDirs = list(f.includeDirs).map((p, k) => this.existingPath(p, 'directory', ...at('includeDirs', k)));
    if (protoFiles.length === 0 || [...protoFiles, ...includeDirs].includes(undefined)) return undefined;
    return { protoFiles: protoFiles as string[], ...(includeDirs.length > 0 ? { includeDirs: includeDirs as string[] } : {}) };
  }

  private route(f: Raw, i: number): ProxyRoute | undefined {
    const name = text(f.name);
    let match: RouteMatch = {};
    if (isRaw(f.match)) {
      const m = f.match;
      const host = text(m.host)?.toLowerCase();
      match = {
        ...(host !== undefined ? { host } : {}),
        ...(typeof m.port === 'number' ? { port: m.port } : {}),
        ...(m.methods !== undefined ? { methods: list(m.methods).filter((x): x is string => typeof x === 'string' && x !== '').map((x) => x.toUpperCase()) } : {}),
        ...(typeof m.path === 'string' ? { path: m.path } : {}),
        ...(m.pathMatch === 'exact' || m.pathMatch === 'lenient' ? { pathMatch: m.pathMatch } : {}),
        ...(typeof m.contentType === 'string' ? { contentType: m.contentType.toLowerCase() } : {}),
      };
      if (host !== undefined && !validHostPattern(host)) this.at('proxy', 'routes', i, 'match', 'host').problem('must be a host name, an IP address, *.name or *');
    }
    const request = isRaw(f.request) ? phaseOf(f.request) : undefined;
    const response = isRaw(f.response) ? phaseOf(f.response) : undefined;
    const grpc = isRaw(f.grpc) ? this.routeGrpc(f.grpc, i) : undefined;
    if (!name) return undefined;
    return {
      name,
      match,
      ...(grpc ? { grpc } : {}),
      ...(request ? { request } : {}),
      ...(response ? { response } : {}),
      onError: f.onError === 'passthrough' ? 'passthrough' : 'reject',
      ...(f.otherContent === 'passthrough' ? { otherContent: 'passthrough' as const } : {}),
      maxBodyBytes: int(f.maxBodyBytes, 0),
    };
  }
}

/** A client's pseudonym scope values: id lists (0 = none given) or "*", and organizationWide (defaults from the schema). */
function pseudonymScopeOf(f: Raw): PseudonymScopeConfig {
  const ids = (x: unknown): readonly number[] | '*' => (x === '*' ? '*' : Array.isArray(x) && x.every((n) => typeof n === 'number') ? (x as number[]) : [0]);
  return { thirdPartyIds: ids(f.thirdPartyIds), dataUsageIds: ids(f.dataUsageIds), organizationWide: bool(f.organizationWide, false) };
}

/** limits.workers: the protection worker pool (docs/operations.md, Workers); max's default depends on the machine. */
/** limits.overload: per-door shedding bounds (docs/operations.md#overload). */
function overloadOf(value: unknown): OverloadConfig {
  const d = DEFAULT_OVERLOAD;
  if (!isRaw(value)) return d;
  return {
    maxRequestsInFlight: int(value.maxRequestsInFlight, d.maxRequestsInFlight),
    maxBytesInFlight: int(value.maxBytesInFlight, d.maxBytesInFlight),
    maxEventLoopDelayMs: int(value.maxEventLoopDelayMs, d.maxEventLoopDelayMs),
    maxEventLoopLagMs: int(value.maxEventLoopLagMs, d.maxEventLoopLagMs ?? 0),
    maxEventLoopUtilization: int(value.maxEventLoopUtilization, d.maxEventLoopUtilization ?? 1),
    retryAfterSeconds: int(value.retryAfterSeconds, d.retryAfterSeconds),
  };
}

function workersOf(value: unknown): WorkersConfig {
  const d = defaultWorkers();
  if (!isRaw(value)) return d;
  return {
    max: int(value.max, d.max),
    inlineBytes: int(value.inlineBytes, d.inlineBytes),
    timeoutMs: int(value.timeoutMs, d.timeoutMs),
    idleMs: int(value.idleMs, d.idleMs),
    nice: int(value.nice, d.nice ?? 0),
  };
}

/** The phase keys the file gave, as they are (the schema checked each one). */
const PHASE_KEYS = [
  'dataSetType', 'countryCode', 'dataOwningCountryCode', 'thirdPartyId', 'dataUsageId', 'isDataConsistentAcrossOrganization',
  'protectNullValues', 'preserveStringLength', 'silentMode', 'sqlDialect', 'delimiter',
] as const;

function phaseOf(f: Raw): RoutePhase | undefined {
  if (typeof f.manifest !== 'string' || typeof f.jobType !== 'string') return undefined;
  const phase: Record<string, unknown> = { manifest: f.manifest, jobType: f.jobType };
  for (const k of PHASE_KEYS) if (f[k] !== undefined) phase[k] = f[k];
  if (f.queryParams !== undefined) phase.queryParams = list(f.queryParams).filter((x): x is string => typeof x === 'string' && x !== '');
  return phase as unknown as RoutePhase;
}

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
