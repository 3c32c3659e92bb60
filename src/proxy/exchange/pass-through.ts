// An unrouted request, streamed untouched both ways over the pooled keep-alive upstream.
//
// Through undici's dispatch() with a handler that writes straight into the app's response, not
// through stream() or request(): those wrap every request in an AsyncResource, a promise, an
// end-of-stream watcher and a cancel signal (2.4 KB more allocated per request in
// bench/proxy-cpu.bench.ts's floors). Pass-through is the proxy's hottest path: apps using
// HTTP_PROXY send every call through it (docs/performance.md, "Forward proxy: pass-through CPU and
// garbage").

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Agent, Dispatcher } from 'undici';
import { carriesBody, endToEndRawHeaders, hasNoBody } from './headers.ts';

/** What the exchange does with an upstream failure the app must hear about (a 502/504 problem). */
export type UpstreamFailure = (res: ServerResponse, err: Error) => void;

/** undici's handler interface as dispatch() calls it (its types mark these callbacks deprecated). */
interface RawHandler {
  onConnect(abort: (err?: Error) => void): void;
  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void, statusText: string): boolean;
  onData(chunk: Buffer): boolean;
  onComplete(trailers: Buffer[] | null): void;
  onError(err: Error): void;
  onUpgrade(): void;
}

/** One pass-through exchange: the handler undici calls, bound to the app's response. */
class PassThrough implements RawHandler {
  private abort: ((err?: Error) => void) | undefined;
  /** The app's response closed before it finished: the upstream request is cancelled, errors are not answered. */
  private gone = false;
  /** A 204/304: its head is answered, any body the upstream sends anyway is dropped. */
  private bodiless = false;
  private readonly res: ServerResponse;
  private readonly failure: UpstreamFailure;

  constructor(res: ServerResponse, failure: UpstreamFailure) {
    this.res = res;
    this.failure = failure;
    res.once('close', () => {
      if (res.writableFinished) return;
      this.gone = true;
      this.abort?.();
    });
  }

  onConnect(abort: (err?: Error) => void): void {
    if (this.gone) abort();
    else this.abort = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void): boolean {
    // 1xx (103 Early Hints): not relayed; the final response follows on the same request.
    if (statusCode < 200) return true;
    const res = this.res;
    if (hasNoBody(statusCode)) {
      this.bodiless = true;
      res.writeHead(statusCode, endToEndRawHeaders(rawHeaders, true));
      res.end();
      return true;
    }
    res.writeHead(statusCode, endToEndRawHeaders(rawHeaders, false));
    // Backpressure: onData's false pauses undici's reading of the upstream until the app's side drains.
    res.on('drain', resume);
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.bodiless || this.gone) return true;
    return this.res.write(chunk);
  }

  onComplete(): void {
    if (!this.bodiless) this.res.end();
  }

  onError(err: Error): void {
    // A body sent with a 204/304 was dropped on purpose; a cancelled request was the app's doing.
    if (this.bodiless || this.gone) return;
    this.failure(this.res, err);
  }

  onUpgrade(): void {
    // Upgrades never come here (forwarding/upgrade.ts); undici calls this only for requests that ask for one.
  }
}

/**
 * Sends one unrouted request upstream and its answer back. `options` carries the target and the
 * request's end-to-end headers; the body, if any, is the app's request stream itself.
 */
export function passThrough(agent: Agent, options: Dispatcher.DispatchOptions, req: IncomingMessage, res: ServerResponse, failure: UpstreamFailure): void {
  // An h2 request carries a body when its HEADERS frame did not end the stream (carriesBody).
  options.body = carriesBody(req) ? req : null;
  agent.dispatch(options, new PassThrough(res, failure) as unknown as Dispatcher.DispatchHandler);
}
