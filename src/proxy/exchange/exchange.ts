// One HTTP exchange through the proxy, whichever listener it came in on (forward, intercepted TLS,
// reverse). The fixed order: match → (no route: stream untouched) → read whole body under the
// limit → decode → protect body and query → encode → forward → response phase → audit + metrics.

import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import type { Readable } from 'node:stream';
import type { Agent, Dispatcher } from 'undici';
import { audit } from '../../core/audit.ts';
import { DpgError, isDpgError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import type { Metrics } from '../../core/metrics.ts';
import { acceptedRequestId } from '../../engine/request-id.ts';
import type { ProxyRoute } from '../../config/types.ts';
import { BodyAbortedError, decodeContent, encodeContent, parseContentEncoding, readBody } from './body.ts';
import { printableType, RefusedInputError } from '../reading/body-kind.ts';
import { isDescriptorShortage } from '../forwarding/connection-limits.ts';
import { carriesBody, endToEndHeaders, hasNoBody, responseHeaders } from './headers.ts';
import { passThrough } from './pass-through.ts';
import { UpstreamRelay } from './upstream-relay.ts';
import { overrideMethods } from '../reading/method-override.ts';
import type { CompiledPhase, PhaseOutcome } from './phase.ts';
import { problemOf, sendProblem, type Problem } from '../problem.ts';
import { mediaTypeOf, type RequestFacts, type RouteSelection, type RouteTable } from '../reading/routes.ts';
import { isUpstreamTlsCode, upstreamProblem } from '../forwarding/upstream.ts';
import { isH2Request } from '../http2/h2-front.ts';
import { isGrpcCall, relayGrpcCall, type GrpcCallDeps } from '../http2/grpc-call.ts';

/** Where a request goes. `host` has no brackets; `path` is origin-form with the query. */
export interface Target {
  readonly scheme: 'http' | 'https';
  readonly host: string;
  readonly port: number;
  readonly path: string;
  /** Host header sent upstream; undefined keeps the app's. */
  readonly hostHeader?: string;
  /**
   * Transparent listener: connect to this address instead of resolving `host` (the connection's
   * original destination), presenting and verifying `servername` (none: verify the address).
   */
  readonly connectTo?: { readonly address: string; readonly servername: string | undefined };
}

export interface CompiledRouteSet {
  readonly table: RouteTable;
  readonly phases: ReadonlyMap<ProxyRoute, { readonly request?: CompiledPhase; readonly response?: CompiledPhase }>;
}

export interface ExchangeDeps {
  readonly routes: CompiledRouteSet;
  readonly agent: Agent;
  /** For HTTP/2 in clear from the app (h2c with prior knowledge): the upstream is spoken to the same way. */
  readonly h2cAgent?: Agent;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Told when an upstream connection failed for want of file descriptors (readiness). */
  readonly onResourceExhausted?: () => void;
  /** gRPC calls over HTTP/2 (http2/grpc-call.ts); absent: they take the ordinary path. */
  readonly grpc?: GrpcCallDeps;
}

export interface Exchange {
  /** Handles one request; never throws (every failure becomes a response or a cut connection). */
  handle(req: IncomingMessage, res: ServerResponse, target: Target): void;
  /** True when `req`'s body would be read whole (a route selects it): the overload gate counts its bytes. */
  holdsBody(req: IncomingMessage, target: Target): boolean;
  /** For `Expect: 100-continue`: a 413 to send instead of 100 when the declared length is over the route's limit. */
  refuseBeforeBody(req: IncomingMessage, target: Target): Problem | undefined;
}

/** Failures that `onError: passthrough` never forwards (the input itself is the problem). */
// WORKER_FAILED too: a worker that crashed or overran may have been brought down by the body itself
// (a document built to exhaust the heap), which is no reason to let it through unread.
const NEVER_PASSED_THROUGH: ReadonlySet<string> = new Set(['PAYLOAD_TOO_LARGE', 'MALFORMED_DATA_SET', 'WORKER_FAILED']);

export function originOf(target: Target): string {
  const address = target.connectTo?.address ?? target.host;
  const host = isIP(address) === 6 ? `[${address}]` : address;
  return `${target.scheme}://${host}:${target.port}`;
}

/** undici takes `servername` at run time though its types omit it; IPs get none (no SNI). */
type DispatchWithServername = Dispatcher.RequestOptions & { servername?: string };

/**
 * Cancels the upstream side of one exchange when the app's side closes early. undici takes an
 * EventEmitter with `aborted` and an 'abort' event as its `signal`. Not an AbortController: in
 * Node 20 each one is an EventTarget re-prototyped with setPrototypeOf, plus an Event on abort; per
 * request that is allocation the young-generation GC pays for, and GC pauses set the proxy's p99.
 */
export class UpstreamCancel extends EventEmitter {
  aborted = false;

  /** Ties cancellation to the app's response: closed before it finished means the app went away. */
  static forResponse(res: ServerResponse): UpstreamCancel {
    const cancel = new UpstreamCancel();
    res.once('close', () => {
      if (!res.writableFinished) cancel.abort();
    });
    return cancel;
  }

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit('abort');
  }
}

/** Where and what undici sends upstream: the target, the method and the end-to-end headers. */
function dispatchOptions(req: IncomingMessage, target: Target): DispatchWithServername {
  return {
    origin: originOf(target),
    path: target.path,
    method: req.method as Dispatcher.HttpMethod,
    headers: endToEndHeaders(req.headers, target.hostHeader),
    servername: target.connectTo ? target.connectTo.servername : isIP(target.host) === 0 ? target.host : undefined,
  };
}

function splitPath(path: string): { pathname: string; query: string | undefined } {
  const q = path.indexOf('?');
  return q === -1 ? { pathname: path, query: undefined } : { pathname: path.slice(0, q), query: path.slice(q + 1) };
}

/**
 * What the route table sees of a request (the table itself canonicalises the host): also the
 * address it is dialled at, and the methods it may be run as (method-override.ts).
 */
export function requestFacts(req: IncomingMessage, target: Target): RequestFacts {
  const { pathname, query } = splitPath(target.path);
  const method = req.method ?? 'GET';
  const contentType = mediaTypeOf(req.headers['content-type']);
  return {
    host: target.host.toLowerCase(),
    port: target.port,
    method,
    path: pathname,
    contentType,
    address: target.connectTo?.address,
    alsoMethods: overrideMethods(method, req.headers, query, contentType),
  };
}

const isAbort = (err: unknown): boolean => {
  const name = (err as { name?: string })?.name;
  const code = (err as { code?: string })?.code;
  return name === 'AbortError' || code === 'UND_ERR_ABORTED' || code === 'ABORT_ERR';
};

export function createExchange(deps: ExchangeDeps): Exchange {
  const { routes, logger, metrics } = deps;
  /** The upstream pool for a request: an app that chose h2c knew its upstream speaks it. */
  const agentFor = (req: IncomingMessage, target: Target): Agent =>
    deps.h2cAgent !== undefined && target.scheme === 'http' && isH2Request(req) ? deps.h2cAgent : deps.agent;

  const matchRoute = (req: IncomingMessage, target: Target): ProxyRoute | undefined => routes.table.match(requestFacts(req, target));

  const noteUpstreamError = (err: unknown): void => {
    if (isDescriptorShortage(err)) deps.onResourceExhausted?.();
  };

  /** How an unrouted request's upstream leg ended: a failure is 502/504 to the app (or its connection cut once the head went out). */
  const passThroughEnded = (res: ServerResponse, err: Error | undefined): void => {
    if (err === undefined) return;
    noteUpstreamError(err);
    sendProblem(res, upstreamProblem(err), undefined);
  };

  async function routed(req: IncomingMessage, res: ServerResponse, target: Target, selection: RouteSelection): Promise<void> {
    const { route } = selection;
    const started = performance.now();
    const headerId = req.headers['x-request-id'];
    const requestId = acceptedRequestId(headerId) ?? randomUUID();
    const phases = routes.phases.get(route) ?? {};
    let outcome = 'ok';
    let addedMs = 0;
    let request: PhaseOutcome | undefined;
    let valuesProtected = 0;
    let valuesFailed = 0;
    // A route without a response phase relays the upstream's answer as it comes, through the same
    // dispatch() handler as pass-through (upstream-relay.ts); one with a response phase reads it whole.
    const relay = phases.response === undefined ? new UpstreamRelay(res, requestId) : undefined;
    const cancel = relay === undefined ? UpstreamCancel.forResponse(res) : undefined;

    try {
      const options = dispatchOptions(req, target);
      const headers = options.headers as Record<string, string | string[]>;

      if (phases.request) {
        const phase = phases.request;
        const declared = Number(req.headers['content-length']);
        if (declared > route.maxBodyBytes) throw new DpgError('PAYLOAD_TOO_LARGE', `The body is larger than the route's limit of ${route.maxBodyBytes} bytes`);
        // The whole body first: a client that stops halfway leaves nothing sent upstream.
        const raw = carriesBody(req) ? await readBody(req, route.maxBodyBytes) : Buffer.alloc(0);
        const t0 = performance.now();
        try {
          const codings = parseContentEncoding(req.headers['content-encoding']);
          const decoded = decodeContent(raw, codings, route.maxBodyBytes);
          const contentType = headers['content-type'] as string | undefined;
          // A body the route cannot read is refused (415) whatever onError says; only otherContent passes it on.
          const kind = decoded.length === 0 ? undefined : phase.kindOf(decoded, contentType, route.match.contentType);
          const otherContent = decoded.length > 0 && kind === undefined;
          if (otherContent && route.otherContent !== 'passthrough') throw otherContentError(mediaTypeOf(contentType), selection.contentTypeMatched);
          const { pathname, query } = splitPath(target.path);
          if (query !== undefined && phase.protectsQuery) {
            const q = phase.protectQuery(query, requestId);
            options.path = `${pathname}?${q.query}`;
            valuesProtected += q.valuesProtected;
          }
          if (otherContent) {
            outcome = 'other-content';
            options.body = raw;
          } else {
            // Unless a failure forwards `raw` as it came (onError: passthrough), a heavy body's memory moves to its worker.
            const consume = decoded !== raw || route.onError !== 'passthrough';
            const protectedBody = await phase.protectBodyAsync(decoded, contentType, requestId, kind, { consume });
            request = protectedBody.outcome;
            valuesProtected += request.valuesProtected;
            valuesFailed += request.valuesFailed;
            if (protectedBody.outcome.dataSetType !== undefined) options.body = encodeContent(protectedBody.body, codings);
            else options.body = raw.length === 0 ? null : raw; // a GET stays a GET without a body
          }
        } catch (err) {
          // Oversized, refused and unparseable input are never forwarded: a body our strict reader
          // refuses may still be read by a lenient upstream. Other failures only when the route opted in.
          if (route.onError !== 'passthrough' || err instanceof RefusedInputError || (isDpgError(err) && NEVER_PASSED_THROUGH.has(err.code))) throw err;
          outcome = 'passthrough';
          logger.warn({ route: route.name, requestId, code: problemOf(err).code }, 'proxy: protection failed, route forwards unprotected (onError: passthrough)');
          options.body = raw;
        } finally {
          addedMs += performance.now() - t0;
        }
        delete headers['content-length']; // undici sets it from the new body
        delete headers['transfer-encoding'];
      } else {
        options.body = carriesBody(req) ? req : null;
      }

      if (relay !== undefined) {
        const agent = agentFor(req, target);
        await new Promise<void>((resolve, reject) => relay.dispatch(agent, options, (_res, err) => (err === undefined ? resolve() : reject(err))));
        // The app left before the answer was complete: the upstream request was cancelled.
        if (relay.appGone) outcome = 'CLIENT_ABORTED';
        return;
      }
      options.signal = cancel;
      const upstream = await agentFor(req, target).request(options);
      const responseHead = responseHeaders(upstream.headers);
      const wantsResponsePhase = phases.response !== undefined && runsResponsePhase(phases.response, req.method, upstream.statusCode);

      if (hasNoBody(upstream.statusCode)) {
        // RFC 9110 §15.3.5, §15.4.5: no body on 204 and 304; one sent anyway is dropped, not relayed.
        upstream.body.dump().catch(() => undefined);
        const head = bodilessHeaders(upstream.headers);
        head['x-request-id'] ??= requestId;
        res.writeHead(upstream.statusCode, head);
        res.end();
      } else if (!wantsResponsePhase) {
        responseHead['x-request-id'] ??= requestId;
        res.writeHead(upstream.statusCode, responseHead);
        await streamTo(upstream.body, res);
      } else {
        const phase = phases.response as CompiledPhase;
        const raw = await readUpstreamBody(upstream.body, route.maxBodyBytes);
        const t0 = performance.now();
        let body: Buffer;
        try {
          const codings = parseContentEncoding(upstream.headers['content-encoding']);
          const decoded = decodeContent(raw, codings, route.maxBodyBytes);
          const consume = decoded !== raw || route.onError !== 'passthrough';
          const result = await phase.protectBodyAsync(decoded, upstream.headers['content-type'] as string | undefined, requestId, undefined, { consume });
          valuesProtected += result.outcome.valuesProtected;
          valuesFailed += result.outcome.valuesFailed;
          body = result.outcome.dataSetType === undefined ? raw : encodeContent(result.body, codings);
        } catch (err) {
          if (route.onError !== 'passthrough' || (isDpgError(err) && err.code === 'WORKER_FAILED')) throw new ResponsePhaseError(err);
          outcome = 'passthrough';
          logger.warn({ route: route.name, requestId, code: problemOf(err).code }, 'proxy: response phase failed, route passes the response on (onError: passthrough)');
          body = raw;
        } finally {
          addedMs += performance.now() - t0;
        }
        delete responseHead['transfer-encoding'];
        responseHead['content-length'] = body.length;
        responseHead['x-request-id'] ??= requestId;
        res.writeHead(upstream.statusCode, responseHead);
        res.end(body);
      }
    } catch (err) {
      if (cancel?.aborted === true || relay?.appGone === true || err instanceof BodyAbortedError || isAbort(err)) {
        outcome = 'CLIENT_ABORTED';
        res.destroy();
      } else if (err instanceof ResponsePhaseError) {
        const p = problemOf(err.cause);
        outcome = p.code;
        sendProblem(res, { ...p, status: 502, detail: `Response phase: ${p.detail}` }, requestId);
      } else if (isDpgError(err)) {
        outcome = err.code;
        // An unread request body stays behind: close the connection rather than parse it as a request.
        sendProblem(res, problemOf(err), requestId, !req.complete);
      } else if (isUndiciError(err)) {
        noteUpstreamError(err);
        const p = upstreamProblem(err);
        outcome = p.code;
        sendProblem(res, p, requestId);
      } else {
        outcome = 'INTERNAL';
        logger.error({ route: route.name, requestId, errorName: (err as Error)?.name }, 'proxy: internal error');
        sendProblem(res, problemOf(err), requestId, !req.complete);
      }
    } finally {
      const phase = phases.request ?? phases.response;
      audit(logger, {
        door: 'proxy',
        requestId,
        route: route.name,
        manifest: phase?.manifest,
        jobType: phase?.jobType,
        dataSetType: request?.dataSetType,
        outcome,
        valuesProtected,
        valuesFailed,
        durationMs: Math.round((performance.now() - started) * 1000) / 1000,
        apiType: 'proxy',
      });
      metrics.observeProxy({ route: route.name, outcome, addedSeconds: addedMs / 1000, valuesProtected });
    }
  }

  return {
    handle(req, res, target) {
      const selection = routes.table.select(requestFacts(req, target));
      // A gRPC call is a stream both ways, read message by message, never whole (grpc-call.ts).
      if (deps.grpc !== undefined && isH2Request(req) && isGrpcCall(req)) {
        relayGrpcCall(deps.grpc, req, res, target, selection && { route: selection.route, ...routes.phases.get(selection.route) });
        return;
      }
      if (selection === undefined) {
        passThrough(agentFor(req, target), dispatchOptions(req, target), req, res, passThroughEnded);
        return;
      }
      routed(req, res, target, selection).catch((err: unknown) => {
        logger.error({ route: selection.route.name, errorName: (err as Error)?.name }, 'proxy: unexpected failure');
        res.destroy();
      });
    },

    holdsBody(req, target) {
      // gRPC calls stream message by message, whatever their route.
      if (isH2Request(req) && isGrpcCall(req)) return false;
      return matchRoute(req, target) !== undefined;
    },

    refuseBeforeBody(req, target) {
      const route = matchRoute(req, target);
      if (route === undefined || routes.phases.get(route)?.request === undefined) return undefined;
      const declared = Number(req.headers['content-length']);
      if (!(declared > route.maxBodyBytes)) return undefined;
      return problemOf(new DpgError('PAYLOAD_TOO_LARGE', `The body is larger than the route's limit of ${route.maxBodyBytes} bytes`));
    },
  };
}

/**
 * Which responses a response phase reads. A forward job (Mask, Pseudonymise, …) protects every
 * response that can carry a body, errors and redirects included: an upstream's 4xx/5xx body may
 * echo the very values the route hides. A reverse job (Reconstruct, Decrypt) restores 2xx bodies only.
 */
export function runsResponsePhase(phase: CompiledPhase, method: string | undefined, status: number): boolean {
  if (method === 'HEAD' || status < 200 || status === 204 || status === 304) return false;
  return phase.reverse ? status < 300 : true;
}

/** Response headers for a 204/304: without the framing of a body that is not relayed. */
function bodilessHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string | string[] | number> {
  const out = responseHeaders(headers) as Record<string, string | string[] | number>;
  delete out['content-length'];
  return out;
}

/**
 * A body of a type the selected route cannot read: 415, whether the route named another type
 * (its contentType) or named none, and whatever onError says.
 */
function otherContentError(mediaType: string, contentTypeMatched: boolean): RefusedInputError {
  const type = mediaType === '' ? 'without a Content-Type' : `of type ${printableType(mediaType)}`;
  const hint = contentTypeMatched ? 'set dataSetType on the route' : 'send a type the route reads';
  return new RefusedInputError(
    'UNSUPPORTED_DATA_SET_TYPE',
    `A body ${type} cannot be read on this route, so it cannot be protected (${hint}, or opt in with otherContent: passthrough)`,
  );
}

/** A failure while protecting what came back: reported as 502, the upstream's body withheld. */
class ResponsePhaseError extends Error {
  constructor(cause: unknown) {
    super('Response phase failed', { cause });
    this.name = 'ResponsePhaseError';
  }
}

function isUndiciError(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  // OpenSSL's verification codes too (UNABLE_TO_VERIFY_LEAF_SIGNATURE: an untrusted upstream), or
  // they would read as the gateway's own internal error (500) instead of the upstream's (502).
  return typeof code === 'string' && (code.startsWith('UND_ERR') || code.startsWith('E') || isUpstreamTlsCode(code));
}

async function readUpstreamBody(body: Readable, limit: number): Promise<Buffer> {
  try {
    return await readBody(body, limit);
  } catch (err) {
    body.destroy();
    if (isDpgError(err)) throw new ResponsePhaseError(err);
    // The upstream's own failure (e.g. body timeout → 504), not the app's.
    const cause = err instanceof BodyAbortedError ? err.cause : err;
    throw cause ?? Object.assign(new Error('upstream body ended early'), { code: 'UND_ERR_SOCKET' });
  }
}

/**
 * Streams an upstream body to the app. Plain pipe() rather than stream.pipeline: pipeline builds
 * and aborts an AbortController per call, a measurable cost on this path.
 */
function streamTo(body: Readable, res: ServerResponse): Promise<void> {
  return new Promise((resolve, reject) => {
    body.once('error', (err) => {
      res.destroy();
      reject(err);
    });
    res.once('close', () => {
      if (!res.writableFinished) body.destroy();
      resolve();
    });
    body.pipe(res);
  });
}
