// An unrouted request, streamed untouched both ways over the pooled keep-alive upstream: the
// app's request stream is the upstream request's body, and the answer is relayed as it comes
// (upstream-relay.ts). Pass-through is the proxy's hottest path: apps using HTTP_PROXY send every
// call through it (docs/performance.md, "Forward proxy").

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Agent, Dispatcher } from 'undici';
import { carriesBody } from './headers.ts';
import { UpstreamRelay, type RelayEnd } from './upstream-relay.ts';

/** What the exchange does with an upstream failure the app must hear about (a 502/504 problem). */
export type UpstreamFailure = (res: ServerResponse, err: Error) => void;

/**
 * Sends one unrouted request upstream and its answer back. `options` carries the target and the
 * request's end-to-end headers; the body, if any, is the app's request stream itself. `ended`: told
 * how it went (a function made once per exchange, not per request).
 */
export function passThrough(agent: Agent, options: Dispatcher.DispatchOptions, req: IncomingMessage, res: ServerResponse, ended: RelayEnd): void {
  // An h2 request carries a body when its HEADERS frame did not end the stream (carriesBody).
  options.body = carriesBody(req) ? req : null;
  new UpstreamRelay(res).dispatch(agent, options, ended);
}
