// The one error catalogue: every failure a client can see has a code here, with its HTTP status,
// its gRPC status and a title. Messages never carry payload values, secrets, keys or tokens.

/** gRPC status codes we map to (numeric values from grpc/status.h, so core needs no grpc import). */
export const GrpcStatus = {
  OK: 0,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

export interface ErrorSpec {
  readonly status: number;
  readonly grpc: number;
  readonly title: string;
}

export const errorCatalogue = {
  INVALID_REQUEST: { status: 400, grpc: GrpcStatus.INVALID_ARGUMENT, title: 'Invalid request' },
  MALFORMED_DATA_SET: { status: 400, grpc: GrpcStatus.INVALID_ARGUMENT, title: 'Malformed data set' },
  UNAUTHENTICATED: { status: 401, grpc: GrpcStatus.UNAUTHENTICATED, title: 'Unauthenticated' },
  FORBIDDEN: { status: 403, grpc: GrpcStatus.PERMISSION_DENIED, title: 'Forbidden' },
  MANIFEST_NOT_FOUND: { status: 404, grpc: GrpcStatus.NOT_FOUND, title: 'Manifest not found' },
  PAYLOAD_TOO_LARGE: { status: 413, grpc: GrpcStatus.RESOURCE_EXHAUSTED, title: 'Payload too large' },
  UNSUPPORTED_DATA_SET_TYPE: {
    status: 415,
    grpc: GrpcStatus.INVALID_ARGUMENT,
    title: 'Unsupported data set type',
  },
  JOB_TYPE_NOT_DEFINED: {
    status: 422,
    grpc: GrpcStatus.FAILED_PRECONDITION,
    title: 'Job type not defined by the manifest',
  },
  VALUE_NOT_PROTECTABLE: {
    status: 422,
    grpc: GrpcStatus.FAILED_PRECONDITION,
    title: 'Values could not be protected',
  },
  INTERNAL: { status: 500, grpc: GrpcStatus.INTERNAL, title: 'Internal error' },
  /** The key version active now is marked retired: new data needs a newer version (docs/keys.md). */
  KEY_RETIRED: { status: 503, grpc: GrpcStatus.UNAVAILABLE, title: 'Key version retired' },
  /**
   * The protection worker running this request crashed or overran limits.workers.timeoutMs
   * (docs/operations.md, Workers). Nothing was sent on; the worker is replaced, so a retry can pass.
   */
  WORKER_FAILED: { status: 503, grpc: GrpcStatus.UNAVAILABLE, title: 'Protection worker failed' },
  /**
   * A door is at one of its overload bounds (docs/operations.md#overload): the request was refused
   * before any work, with Retry-After. UNAVAILABLE on gRPC: the code clients retry with backoff.
   */
  OVERLOADED: { status: 503, grpc: GrpcStatus.UNAVAILABLE, title: 'Overloaded' },
  // Transport-level codes: the HTTP router and the egress proxy, never the engine.
  ROUTE_NOT_FOUND: { status: 404, grpc: GrpcStatus.UNIMPLEMENTED, title: 'Not found' },
  METHOD_NOT_ALLOWED: { status: 405, grpc: GrpcStatus.UNIMPLEMENTED, title: 'Method not allowed' },
  UPSTREAM_UNREACHABLE: { status: 502, grpc: GrpcStatus.UNAVAILABLE, title: 'Bad gateway' },
  UPSTREAM_TIMEOUT: { status: 504, grpc: GrpcStatus.DEADLINE_EXCEEDED, title: 'Gateway timeout' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof errorCatalogue;

/** Where and why one value failed; `location` is a path or row/column, never the value itself. */
export interface ValueFailure {
  readonly location: string;
  readonly reason: string;
}

export interface DpgErrorOptions {
  /** Per-value failures (VALUE_NOT_PROTECTABLE) or per-field validation problems (INVALID_REQUEST). */
  readonly errors?: readonly ValueFailure[];
  readonly cause?: unknown;
}

/**
 * The error every layer throws for client-visible failures. `detail` is written by us, from
 * names and positions only: it is safe to return to clients and to log.
 */
export class DpgError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly grpcStatus: number;
  readonly title: string;
  readonly errors: readonly ValueFailure[] | undefined;

  constructor(code: ErrorCode, detail: string, options: DpgErrorOptions = {}) {
    super(detail, options.cause === undefined ? undefined : { cause: options.cause });
    const spec: ErrorSpec = errorCatalogue[code];
    this.name = 'DpgError';
    this.code = code;
    this.status = spec.status;
    this.grpcStatus = spec.grpc;
    this.title = spec.title;
    this.errors = options.errors;
  }
}

export function isDpgError(err: unknown): err is DpgError {
  return err instanceof DpgError;
}

/**
 * Turns anything thrown into a DpgError without leaking its message: a foreign error's text may
 * quote payload data (parsers love to), so only our own errors keep their detail.
 */
export function toDpgError(err: unknown): DpgError {
  if (err instanceof DpgError) return err;
  return new DpgError('INTERNAL', 'An internal error occurred', { cause: err });
}

/**
 * A problem in a configuration or manifest file, reported with file and line. Thrown at load time
 * only (never for a request); collected so `dpg validate` can print every problem at once.
 */
export interface ConfigProblem {
  readonly file: string;
  readonly line?: number;
  readonly column?: number;
  readonly path?: string;
  readonly message: string;
}

export class ConfigError extends Error {
  readonly problems: readonly ConfigProblem[];

  constructor(problems: readonly ConfigProblem[]) {
    super(problems.map(formatConfigProblem).join('\n'));
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

export function formatConfigProblem(p: ConfigProblem): string {
  const where = p.line === undefined ? p.file : `${p.file}:${p.line}${p.column === undefined ? '' : `:${p.column}`}`;
  return `${where}: ${p.path ? `${p.path}: ` : ''}${p.message}`;
}

/**
 * Why the gateway could not start (an address in use, a file it cannot read, refused demo
 * credentials). Our own message, naming the cause and never a secret: `dpg serve` prints it and
 * exits non-zero instead of a bare INTERNAL.
 */
export class StartupError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StartupError';
  }
}

/** The RFC 9457 `type` URI of a catalogue code (documented in docs/http-api.md). */
export function problemType(code: ErrorCode): string {
  return `urn:dpg:error:${code}`;
}
