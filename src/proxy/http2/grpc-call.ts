// One gRPC call (an HTTP/2 request with `content-type: application/grpc…`) through the proxy. It is
// streamed, never read whole: a call may be a bidirectional stream that lasts as long as the app
// likes. On a routed call the request's DATA goes through the route's request phase's gRPC
// transform (grpc-egress/contract.ts) and the response's through the response phase's; everything
// else — headers, trailers, unrouted calls — passes as it came. A call that cannot be protected
// ends with a gRPC status whose message holds no payload, and the upstream stream is reset so that
// nothing of the failing message reaches it.

import { randomUUID } from 'node:crypto';
import { constants, type ClientHttp2Stream, type IncomingHttpHeaders, type OutgoingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable, Transform } from 'node:stream';
import { audit } from '../../core/audit.ts';
import type { Logger } from '../../core/logger.ts';
import type { Metrics } from '../../core/metrics.ts';
import { acceptedRequestId } from '../../engine/request-id.ts';
import type { ProxyRoute } from '../../config/types.ts';
import type { Target } from '../exchange/exchange.ts';
import { endToEndHeaders } from '../exchange/headers.ts';
import type { CompiledPhase } from '../exchange/phase.ts';
import { GrpcCallError, type GrpcTally } from '../grpc-egress/contract.ts';
import { markFirst, traceCall } from './call-trace.ts';
import type { UpstreamSessions } from './upstream-sessions.ts';

/** gRPC status codes the proxy ends calls with (grpc/doc/statuscodes.md). */
const FAILED_PRECONDITION = 9;
const INTERNAL = 13;
const UNAVAILABLE = 14;

/** True for a gRPC call: `application/grpc`, `application/grpc+proto`, `application/grpc-web…` excluded. */
export function isGrpcCall(req: IncomingMessage): boolean {
  const type = req.headers['content-type'];
  return typeof type === 'string' && /^application\/grpc(?:$|[+;])/i.test(type);
}

export interface GrpcRouting {
  readonly route: ProxyRoute;
  readonly request?: CompiledPhase;
  readonly response?: CompiledPhase;
}

export interface GrpcCallDeps {
  readonly sessions: UpstreamSessions;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

/**
 * Relays one call to the target's upstream. `routing`: the route that covers it (undefined:
 * unrouted, passed untouched). Never throws; every failure ends the call with a gRPC status.
 */
export function relayGrpcCall(deps: GrpcCallDeps, req: IncomingMessage, res: ServerResponse, target: Target, routing: GrpcRouting | undefined): void {
  const app = (res as unknown as { stream: ServerHttp2Stream }).stream;
  const started = performance.now();
  const requestId = acceptedRequestId(req.headers['x-request-id']) ?? randomUUID();
  // Phase times for the bench that looks for where calls wait (call-trace.ts); undefined unless it listens.
  const mark = traceCall(requestId);
  mark?.('open');
  let outcome = 'ok';
  // Both directions' transforms add to it; read when the call is over (their counts are final by then).
  const tally: GrpcTally = { valuesProtected: 0, valuesFailed: 0 };
  const transforms: Transform[] = [];
  const finish = (): void => {
    if (routing === undefined) return;
    // A call cut short leaves its transforms mid-stream: ended now, they add what they protected.
    for (const t of transforms) t.destroy();
    const phase = routing.request ?? routing.response;
    audit(deps.logger, {
      door: 'proxy',
      requestId,
      route: routing.route.name,
      manifest: phase?.manifest,
      jobType: phase?.jobType,
      dataSetType: undefined,
      outcome,
      valuesProtected: tally.valuesProtected,
      valuesFailed: tally.valuesFailed,
      durationMs: Math.round((performance.now() - started) * 1000) / 1000,
      apiType: 'proxy',
    });
    deps.metrics.observeProxy({ route: routing.route.name, outcome, addedSeconds: 0, valuesProtected: tally.valuesProtected });
  };
  app.once('close', finish);

  // A route whose phase cannot read gRPC messages: nothing is sent upstream (DESIGN §9).
  const phases = routing === undefined ? [] : [routing.request, routing.response].filter((p): p is CompiledPhase => p !== undefined);
  if (phases.some((p) => p.grpc === undefined)) {
    outcome = 'GRPC_NOT_PROTECTABLE';
    endCall(app, FAILED_PRECONDITION, 'The route covering this call names no gRPC message types, so its messages cannot be protected');
    return;
  }

  let up: ClientHttp2Stream;
  try {
    up = deps.sessions.sessionFor(target).request(upstreamHeaders(req.headers, target), { endStream: false });
  } catch {
    outcome = 'UPSTREAM_UNREACHABLE';
    endCall(app, UNAVAILABLE, 'The upstream could not be reached');
    return;
  }
  let ended = false;
  let upTrailers: IncomingHttpHeaders | undefined;
  let ownTrailers: OutgoingHttpHeaders | undefined;

  /** Ends the call with a status of ours: the upstream stream reset, the app told once. */
  const fail = (status: number, message: string, code: string): void => {
    if (ended) return;
    ended = true;
    outcome = code;
    req.unpipe();
    if (!up.destroyed) up.close(constants.NGHTTP2_CANCEL);
    if (!app.headersSent) endCall(app, status, message);
    else if (!app.destroyed) {
      // Response messages went out already: the status goes in the trailers, after what was sent.
      ownTrailers = statusTrailers(status, message);
      app.end();
    }
  };
  const failWith = (err: unknown): void => {
    if (err instanceof GrpcCallError) fail(err.status, err.grpcMessage, 'GRPC_CALL_ERROR');
    else fail(INTERNAL, 'The call could not be protected', 'INTERNAL');
  };
  const callOf = (encoding: string | string[] | undefined) => ({ path: target.path, encoding: typeof encoding === 'string' ? encoding : undefined, requestId, tally });

  // Request messages: app → (protect) → upstream, with back-pressure, one whole message at a time.
  let source: Readable = req;
  const requestMessages: Transform | undefined = routing?.request?.grpc?.messages(callOf(req.headers['grpc-encoding']));
  if (requestMessages !== undefined) {
    requestMessages.on('error', failWith);
    transforms.push(requestMessages);
    source = req.pipe(requestMessages);
  }
  source.pipe(up);
  if (mark !== undefined) {
    markFirst(mark, req, 'end', 'reqEnd');
    markFirst(mark, source, 'data', 'protected');
    markFirst(mark, up, 'finish', 'upFinish');
    markFirst(mark, up, 'trailers', 'upTrailers');
    markFirst(mark, app, 'close', 'closed');
  }

  up.on('response', (headers, flags) => {
    mark?.('upHeaders');
    if (ended) return;
    const head = responseHead(headers);
    // Trailers-only (an error status at once): headers and status in one frame.
    if ((flags & constants.NGHTTP2_FLAG_END_STREAM) !== 0) {
      ended = true;
      app.respond(head, { endStream: true });
      return;
    }
    app.respond(head, { waitForTrailers: true });
    let body: Readable = up;
    const responseMessages = routing?.response?.grpc?.messages(callOf(headers['grpc-encoding']));
    if (responseMessages !== undefined) {
      responseMessages.on('error', failWith);
      transforms.push(responseMessages);
      body = up.pipe(responseMessages);
    }
    body.pipe(app);
    markFirst(mark, body, 'data', 'responseOut');
  });
  up.on('trailers', (trailers) => {
    upTrailers = trailers;
  });
  // The compatibility response would send its own (empty) trailers first: the call's are sent here.
  app.removeAllListeners('wantTrailers');
  app.on('wantTrailers', () => {
    ended = true;
    mark?.('trailersSent');
    app.sendTrailers(ownTrailers ?? (upTrailers ? passedHeaders(upTrailers) : statusTrailers(INTERNAL, 'The upstream ended the call without a status')));
  });
  up.on('error', () => undefined);
  up.on('close', () => {
    // A call the upstream ended in order finishes through the pipe (and its trailers) above.
    if (ended || (up.rstCode === constants.NGHTTP2_NO_ERROR && up.readableEnded)) return;
    // The upstream went away (or reset the stream) before the call ended.
    if (!app.headersSent) fail(UNAVAILABLE, 'The upstream closed the call', 'UPSTREAM_UNREACHABLE');
    else if (!app.destroyed) {
      ended = true;
      app.close(up.rstCode === constants.NGHTTP2_NO_ERROR ? constants.NGHTTP2_INTERNAL_ERROR : up.rstCode);
    }
  });
  // The app cancelled (reset) or its connection closed: the upstream call is cancelled too.
  app.on('close', () => {
    if (!up.destroyed && !(up.writableFinished && up.readableEnded)) up.close(constants.NGHTTP2_CANCEL);
  });
}

/** The request's headers for the upstream stream: end-to-end fields, the pseudo-headers of the target. */
function upstreamHeaders(headers: IncomingHttpHeaders, target: Target): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = endToEndHeaders(headers);
  const authority = target.hostHeader ?? out.host;
  delete out.host;
  out[':method'] = 'POST';
  out[':scheme'] = target.scheme;
  out[':path'] = target.path;
  out[':authority'] = typeof authority === 'string' ? authority : target.host;
  // gRPC requires it (RFC 9113 allows `te: trailers` alone); the hop-by-hop filter dropped the app's.
  out.te = 'trailers';
  return out;
}

/** Response headers or trailers from the upstream, without what belongs to its connection. */
function passedHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  return endToEndHeaders(headers);
}

function responseHead(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  return { ...passedHeaders(headers), ':status': headers[':status'] ?? 200 };
}

/** grpc-status and a percent-encoded grpc-message (the gRPC HTTP/2 protocol's rules). */
function statusTrailers(status: number, message: string): OutgoingHttpHeaders {
  return { 'grpc-status': String(status), 'grpc-message': message.replace(/[^\x20-\x24\x26-\x7e]/g, (c) => encodeURIComponent(c)) };
}

/** Ends a call that has sent nothing yet with a trailers-only response. */
function endCall(app: ServerHttp2Stream, status: number, message: string): void {
  if (app.destroyed || app.headersSent) return;
  app.respond({ ':status': 200, 'content-type': 'application/grpc', ...statusTrailers(status, message) }, { endStream: true });
}
