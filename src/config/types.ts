// The validated gateway configuration (config/gateway.yaml after environment overrides).
// Every relative path here is already resolved to an absolute one; durations are numbers.

export interface ListenAddress {
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
}

export interface TlsFiles {
  /** PEM file paths. */
  readonly cert: string;
  readonly key: string;
  /** Optional CA bundle for client certificates (not required by default). */
  readonly ca?: string;
}

export interface HttpConfig {
  /**
   * false turns the HTTP API (and its token endpoint) off: the sidecar profile. The loader always
   * sets it; absent (configs built in code) means on.
   */
  readonly enabled?: boolean;
  readonly listen: ListenAddress;
  /** Body limit of /api/protect, enforced before parsing. Default 10 MiB. */
  readonly maxBodyBytes: number;
  /** Cap on the streamed data of /file/protect. Default 2 GiB. */
  readonly maxFileBytes: number;
  /** Whether /file/protect needs X-Resource-Token. Default true. */
  readonly requireTokenForFileProtect: boolean;
  /** Time allowed for in-flight requests on SIGTERM. Default 10 s. */
  readonly shutdownGraceMs: number;
}

export interface GrpcConfig {
  /** false turns the gRPC API off: the sidecar profile. Absent means on, as for http. */
  readonly enabled?: boolean;
  readonly listen: ListenAddress;
  /** Max receive/send message size. Default 64 MiB. */
  readonly maxMessageBytes: number;
  /** TLS when set, plaintext otherwise. */
  readonly tls?: TlsFiles;
}

export type Scope = 'protect' | 'reconstruct' | 'decrypt';

/** The pseudonym scope values a client may use (docs/identity.md). */
export interface PseudonymScopeConfig {
  /** Allowed thirdPartyId values; 0 stands for "none given"; '*' for any. */
  readonly thirdPartyIds: readonly number[] | '*';
  /** Allowed dataUsageId values, likewise. */
  readonly dataUsageIds: readonly number[] | '*';
  /** Whether isDataConsistentAcrossOrganization may be set. */
  readonly organizationWide: boolean;
}

export interface ClientConfig {
  readonly id: string;
  /** Hashed secret as written by `dpg hash-secret` (see docs/identity.md). Never the clear secret. */
  readonly secretHash: string;
  readonly scopes: readonly Scope[];
  /** When present, the only manifests this client may use. */
  readonly manifests?: readonly string[];
  /** Absent: no thirdPartyId, no dataUsageId, not organisation-wide (DEFAULT_PSEUDONYM_SCOPE). */
  readonly pseudonymScope?: PseudonymScopeConfig;
}

export interface ApiKeyConfig {
  readonly id: string;
  readonly hash: string;
}

export interface IdentityConfig {
  /** `iss` of issued tokens, checked on verification. */
  readonly issuer: string;
  /** `aud` of issued tokens, checked on verification. */
  readonly audience: string;
  /** Default 900. */
  readonly tokenTtlSeconds: number;
  /**
   * Where the signing keys live: a directory of JWKs managed by the gateway (generated under
   * DPG_DATA_DIR/identity by default). Rotation adds a key and keeps old ones until their tokens expire.
   */
  readonly signingKeyDir: string;
  /** Rotate the signing key when the current one is older than this. Default 7 days. */
  readonly signingKeyRotationSeconds: number;
  /** Optional remote JWKS to trust for verification (central identity deployment). */
  readonly trustedJwksUrl?: string;
  readonly apiKeys: readonly ApiKeyConfig[];
  readonly clients: readonly ClientConfig[];
}

export type KeySource =
  | { readonly source: 'generated' }
  | { readonly source: 'file'; readonly file: string }
  | { readonly source: 'env'; readonly env: string };

export type KeysConfig = KeySource & {
  /** Key id used when a manifest names none. Default: the keyring's default. */
  readonly defaultKey?: string;
};

export interface RouteMatch {
  /** Exact host or wildcard (`*.partner.example`); absent matches any host. */
  readonly host?: string;
  readonly port?: number;
  readonly methods?: readonly string[];
  /** Glob: `*` one segment, `**` any number of segments. */
  readonly path?: string;
  /**
   * How `path` is compared (docs/proxy.md "Paths"): `lenient` (default) as common servers route —
   * letter case ignored, a format suffix (`.json`) of the last segment, trailing dots, spaces and
   * slashes ignored; `exact`: the canonical path as it is, case-sensitive.
   */
  readonly pathMatch?: 'lenient' | 'exact';
  /** Media type without parameters (`application/json`), may end with `/*`. */
  readonly contentType?: string;
}

export interface RoutePhase {
  readonly manifest: string;
  readonly jobType: string;
  /** Inferred from Content-Type when absent. */
  readonly dataSetType?: string;
  readonly countryCode?: string;
  readonly dataOwningCountryCode?: string;
  readonly thirdPartyId?: number;
  readonly dataUsageId?: number;
  readonly isDataConsistentAcrossOrganization?: boolean;
  readonly protectNullValues?: boolean;
  readonly preserveStringLength?: boolean;
  readonly silentMode?: boolean;
  readonly sqlDialect?: string;
  /**
   * The delimiter of LIST (CSV) bodies (one of `,` `;` tab `|`). Absent: read from the header line,
   * and a body whose delimiter is not certain is refused (docs/proxy.md "Body types").
   */
  readonly delimiter?: string;
  /** Query-string parameters protected as fields of the same manifest. */
  readonly queryParams?: readonly string[];
}

/**
 * A route's gRPC message types (docs/grpc-egress.md): `.proto` files (with the directories their
 * imports are looked up in) or a descriptor set (a serialised FileDescriptorSet); paths absolute.
 */
export interface RouteGrpc {
  readonly protoFiles?: readonly string[];
  readonly includeDirs?: readonly string[];
  readonly descriptorSet?: string;
}

export interface ProxyRoute {
  readonly name: string;
  readonly match: RouteMatch;
  /** Present when the route protects the messages of gRPC calls (the methods `match.path` selects). */
  readonly grpc?: RouteGrpc;
  readonly request?: RoutePhase;
  readonly response?: RoutePhase;
  /** Default `reject`: fail closed. */
  readonly onError: 'reject' | 'passthrough';
  /**
   * A body of a type the route cannot read (neither its own type nor one the engine protects):
   * `reject` (default) answers 415; `passthrough` forwards it unread.
   */
  readonly otherContent?: 'reject' | 'passthrough';
  /** Default 10 MiB. */
  readonly maxBodyBytes: number;
}

export interface ReverseListener {
  readonly listen: ListenAddress;
  /** Base URL of the upstream (http or https). */
  readonly upstream: string;
}

/** The transparent listener for connections `dpg capture` redirects (docs/transparent.md). */
export interface TransparentConfig {
  /** Default 127.0.0.1:15006; DPG_TRANSPARENT_ADDR overrides (and turns the listener on). */
  readonly listen: ListenAddress;
  /** Also listen on [::1] at the same port (skipped when the host has no IPv6). Default true. */
  readonly ipv6: boolean;
  /** How long a silent client is waited for before its upstream is connected. Default 500 ms. */
  readonly peekTimeoutMs: number;
  /** A ClientHello hiding its server name (ECH) that nothing else routes: refused (default) or spliced. */
  readonly encryptedClientHello: 'refuse' | 'splice';
  /**
   * Which TLS connections on a port a route names are intercepted: `routed` (default) those whose
   * server name or address is routed, or that name no server; `all` every one, so that each
   * request's Host decides (domain fronting). DPG_TRANSPARENT_INSPECT overrides.
   */
  readonly inspect: 'routed' | 'all';
}

export interface ProxyConfig {
  readonly enabled: boolean;
  /** The forward listener's address (unused when `forward` is off). */
  readonly listen: ListenAddress;
  /**
   * `off` (DPG_PROXY_ADDR=off or `proxy.listen: off`): no forward listener; the transparent and
   * reverse listeners still run, and health is answered on a Unix socket (src/proxy/health-socket.ts).
   */
  readonly forward?: 'off';
  /** Gateway CA for intercepted TLS; generated under DPG_DATA_DIR when absent. */
  readonly ca?: { readonly cert: string; readonly key: string };
  /** Extra PEM roots trusted for upstream TLS, added to the system roots. */
  readonly upstreamCa?: string;
  readonly connectTimeoutMs: number;
  readonly responseTimeoutMs: number;
  /** A client connection (tunnel, intercepted or spliced) with no byte either way is closed. Default 120 s. */
  readonly idleTimeoutMs?: number;
  /** Concurrent client connections per listener; new ones over it are refused. Default 1024. */
  readonly maxConnections?: number;
  /** How often route host names are resolved again (their addresses count as them). Default 60 s. */
  readonly routeHostsRefreshMs?: number;
  readonly routes: readonly ProxyRoute[];
  readonly reverse: readonly ReverseListener[];
  /** Present when the transparent listener is on. */
  readonly transparent?: TransparentConfig;
}

export interface LimitsConfig {
  /** Max nesting depth of JSON/XML documents. Default 256. */
  readonly maxDepth: number;
  /** Max rows of a gRPC request. Default 1,000,000. */
  readonly maxRows: number;
  /** Max length of one value in characters. Default 1 MiB. */
  readonly maxValueLength: number;
  /**
   * Max bytes of a document that has to be held whole: XML and SQL on /file/protect (LIST and JSON
   * arrays stream). Default 64 MiB.
   */
  readonly maxDocumentBytes: number;
  /**
   * The protection worker pool for heavy documents (docs/operations.md, Workers). The config
   * loader always sets it; absent (engines built by hand, as some tests do): everything inline.
   */
  readonly workers?: WorkersConfig;
  /** Overload shedding per door (docs/operations.md#overload). Absent (configs built in code): the defaults. */
  readonly overload?: OverloadConfig;
}

/** limits.overload: beyond these bounds a door answers new work 503 with Retry-After. */
export interface OverloadConfig {
  /** Requests in flight per door. Default 256. */
  readonly maxRequestsInFlight: number;
  /** Request body bytes in flight per door (declared or received). Default 32 MiB. */
  readonly maxBytesInFlight: number;
  /** Event-loop lateness above which every door sheds for a second; 0 turns the guard off. Default 1000. */
  readonly maxEventLoopDelayMs: number;
  /**
   * Median event-loop lateness over the last second (requests queueing) above which every door
   * sheds; 0 turns the guard off; absent (configs built in code): off. Default 50.
   */
  readonly maxEventLoopLagMs?: number;
  /**
   * Share of time (0-1) the event loop may be busy, averaged over about a second; above it every
   * door sheds, even while it keeps up (opt-in). 1 turns this guard off; absent: off. Default 1.
   */
  readonly maxEventLoopUtilization?: number;
  /** The Retry-After answered with a shed request, in seconds. Default 1. */
  readonly retryAfterSeconds: number;
}

/** limits.workers: documents above inlineBytes (weighted) are protected off the event loop. */
export interface WorkersConfig {
  /** Most worker threads at once; 0 protects everything inline. Default min(2, cores - 1), at least 1. */
  readonly max: number;
  /** Weighted size (bytes × the data type's cost factor) up to which work stays inline. Default 32 KiB. */
  readonly inlineBytes: number;
  /** A task running longer fails with WORKER_FAILED and its worker is replaced. Default 120,000. */
  readonly timeoutMs: number;
  /** An idle worker is stopped after this long, so an idle sidecar holds none. Default 30,000. */
  readonly idleMs: number;
  /**
   * Nice value (0-19) each worker thread gives itself on Linux, so the event loop wins a contended
   * core. Absent or 0: the event loop's priority. Default 10.
   */
  readonly nice?: number;
}

/**
 * The admin listener: GET /metrics, /healthz and /readyz on a port of their own, so the sidecar
 * profile (HTTP API off) can be scraped and probed (docs/operations.md#admin-port).
 */
export interface AdminConfig {
  /** `admin.listen` or DPG_ADMIN_ADDR; loopback in the sidecar profile (127.0.0.1:15020). */
  readonly listen: ListenAddress;
}

export interface LoggingConfig {
  readonly level: string;
  /** Bytes of log lines held while stdout's reader is slow; beyond them lines are dropped and counted. */
  readonly bufferBytes: number;
}

export interface GatewayConfig {
  /** Absolute path of the config file this came from. */
  readonly file: string;
  /**
   * Where generated state lives (dev keyring, identity keys, proxy CA), absolute: DPG_DATA_DIR
   * (relative to the working directory), else `.dpg` in the config file's directory — never the
   * working directory by default, so every command of one config finds the same keyring.
   */
  readonly dataDir: string;
  readonly http: HttpConfig;
  readonly grpc: GrpcConfig;
  readonly identity: IdentityConfig;
  readonly keys: KeysConfig;
  /** Absolute path of the manifests directory. */
  readonly manifests: string;
  readonly proxy: ProxyConfig;
  readonly limits: LimitsConfig;
  readonly logging: LoggingConfig;
  /** Absent: no admin listener (`admin.listen: off`, the default; DPG_ADMIN_ADDR=off). */
  readonly admin?: AdminConfig;
}
