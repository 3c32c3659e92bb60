// The upstream leg of an exchange whose answer is relayed as it comes: an unrouted request, or a
// routed one whose route has no response phase. Through undici's dispatch() with a handler that
// writes straight into the app's response, not through stream() or request(): those wrap every
// request in an AsyncResource, a promise, an end-of-stream watcher, a cancel signal and (request())
// a Readable for the body — objects the young-generation GC pays for on the proxy's hottest paths
// (docs/performance.md, "Forward proxy").

import type { ServerResponse } from 'node:http';
import type { Agent, Dispatcher } from 'undici';
import { endToEndRawHeaders, hasNoBody } from './headers.ts';

/**
 * Told once, when the relay is over: `err` undefined when the upstream's answer was relayed whole
 * (or the app went away first: `appGone`), else the upstream's failure, which the caller answers
 * (a 502/504 before the head; after it, sendProblem cuts the app's connection). A function shared
 * by every exchange, not a closure per request, where the caller can.
 */
export type RelayEnd = (res: ServerResponse, err: Error | undefined) => void;

/** undici's handler interface as dispatch() calls it (its types mark these callbacks deprecated). */
interface RawHandler {
  onConnect(abort: (err?: Error) => void): void;
  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void, statusText: string): boolean;
  onData(chunk: Buffer): boolean;
  onComplete(trailers: Buffer[] | null): void;
  onError(err: Error): void;
  onUpgrade(): void;
}

/** One relay: the handler undici calls, bound to the app's response. */
export class UpstreamRelay implements RawHandler {
  private abort: ((err?: Error) => void) | undefined;
  /** The app's response closed before it finished: the upstream request is cancelled, errors are not answered. */
  appGone = false;
  /** A 204/304: its head is answered, any body the upstream sends anyway is dropped. */
  private bodiless = false;
  private readonly res: ServerResponse;
  private readonly requestId: string | undefined;
  private end: RelayEnd | undefined;

  /**
   * Watches `res` from now on (create it as soon as the exchange starts: an app that leaves while a
   * routed body is read or protected is noticed). `requestId`: added as X-Request-Id to the answer
   * unless the upstream sent one.
   */
  constructor(res: ServerResponse, requestId?: string) {
    this.res = res;
    this.requestId = requestId;
    res.once('close', () => {
      if (res.writableFinished) return;
      this.appGone = true;
      this.abort?.();
    });
  }

  /** Sends the request; `end` is told once how it went. Nothing is sent when the app has gone already. */
  dispatch(agent: Agent, options: Dispatcher.DispatchOptions, end: RelayEnd): void {
    this.end = end;
    if (this.appGone) {
      this.finish(undefined);
      return;
    }
    agent.dispatch(options, this as unknown as Dispatcher.DispatchHandler);
  }

  onConnect(abort: (err?: Error) => void): void {
    if (this.appGone) abort();
    else this.abort = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void): boolean {
    // 1xx (103 Early Hints): not relayed; the final response follows on the same request.
    if (statusCode < 200) return true;
    const res = this.res;
    this.bodiless = hasNoBody(statusCode);
    const headers = endToEndRawHeaders(rawHeaders, this.bodiless);
    if (this.requestId !== undefined && !namesHeader(headers, 'x-request-id')) headers.push('x-request-id', this.requestId);
    res.writeHead(statusCode, headers);
    if (this.bodiless) {
      res.end();
      return true;
    }
    // Backpressure: onData's false pauses undici's reading of the upstream until the app's side drains.
    res.on('drain', resume);
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.bodiless || this.appGone) return true;
    return this.res.write(chunk);
  }

  onComplete(): void {
    if (!this.bodiless) this.res.end();
    this.finish(undefined);
  }

  onError(err: Error): void {
    // A body sent with a 204/304 was dropped on purpose; a cancelled request was the app's doing.
    this.finish(this.bodiless || this.appGone ? undefined : err);
  }

  onUpgrade(): void {
    // Upgrades never come here (forwarding/upgrade.ts); undici calls this only for requests that ask for one.
  }

  private finish(err: Error | undefined): void {
    const end = this.end;
    this.end = undefined;
    end?.(this.res, err);
  }
}

/** True when a flat name/value list (names in lower case) holds `name`. */
function namesHeader(headers: readonly string[], name: string): boolean {
  for (let i = 0; i < headers.length; i += 2) if (headers[i] === name) return true;
  return false;
}
