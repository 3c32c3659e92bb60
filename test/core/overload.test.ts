// Overload gates (core/overload.ts) counted directly: request and byte bounds per door, chunked
// bytes counted as they arrive, release exactly once, and the event-loop guard after a real stall.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Overload, type OverloadDoor, type ShedReason } from '../../src/core/overload.ts';

const config = { maxRequestsInFlight: 2, maxBytesInFlight: 100, maxEventLoopDelayMs: 0, retryAfterSeconds: 1 };

describe('overload gates', () => {
  it('admit up to maxRequestsInFlight per door, shed the next one, and admit again after a release', () => {
    const sheds: [OverloadDoor, ShedReason][] = [];
    const o = new Overload(config, { onShed: (d, r) => sheds.push([d, r]) });
    const a = o.gate('proxy').admit(0);
    const b = o.gate('proxy').admit(0);
    assert.equal(typeof a, 'object');
    assert.equal(typeof b, 'object');
    assert.equal(o.gate('proxy').admit(0), 'requests');
    // Another door has bounds of its own.
    assert.equal(typeof o.gate('http').admit(0), 'object');
    assert.match(o.saturated() ?? '', /^proxy: requests in flight/);
    if (typeof a === 'string') throw new Error('not admitted');
    a.release();
    a.release(); // idempotent
    assert.equal(o.gate('proxy').requests, 1);
    assert.equal(o.saturated(), undefined);
    assert.equal(typeof o.gate('proxy').admit(0), 'object');
    assert.deepEqual(sheds, [['proxy', 'requests']]);
    assert.equal(o.gate('proxy').refuseNew(), 'requests');
    assert.deepEqual(sheds.at(-1), ['proxy', 'requests']);
    o.close();
  });

  it('bound declared and received bytes; a single body larger than the bound passes an empty door', () => {
    const o = new Overload({ ...config, maxRequestsInFlight: 10 });
    const g = o.gate('reverse');
    const big = g.admit(500);
    assert.equal(typeof big, 'object');
    assert.equal(g.admit(1), 'bytes');
    if (typeof big === 'string') throw new Error('not admitted');
    big.release();
    assert.equal(g.bytes, 0);
    const chunked = g.admit(0);
    if (typeof chunked === 'string') throw new Error('not admitted');
    chunked.received(60);
    assert.equal(g.bytes, 60);
    assert.equal(typeof g.admit(40), 'object');
    assert.equal(g.bytes, 100);
    assert.equal(g.admit(1), 'bytes');
    assert.equal(g.saturation(), 'bytes');
    chunked.received(10);
    assert.equal(g.bytes, 110);
    chunked.release();
    assert.equal(g.bytes, 40);
    o.close();
  });

  it('shed every door for a while after the event loop stalls past maxEventLoopDelayMs twice in a row (not once), then recover', async () => {
    const o = new Overload({ ...config, maxEventLoopDelayMs: 150 });
    const g = o.gate('grpc');
    assert.equal(g.saturation(), undefined);
    const stall = (ms: number): void => {
      const until = performance.now() + ms;
      while (performance.now() < until) {
        // A stall, as an inline parse of a large body would cause.
      }
    };
    stall(600);
    // The overdue sampling timer runs first in the next loop turn, before this one.
    await new Promise((r) => setTimeout(r, 0));
    assert.equal(g.saturation(), undefined, 'one stall alone (often the request that caused it) sheds nothing');
    stall(600);
    await new Promise((r) => setTimeout(r, 0));
    assert.equal(g.admit(0), 'event-loop');
    assert.match(o.saturated() ?? '', /event loop delay/);
    assert.ok(o.loopDelayMs() >= 0);
    // Watchdog only: returns as soon as the guard opens again (it holds for one second).
    for (let i = 0; i < 200 && g.saturation() !== undefined; i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(g.saturation(), undefined);
    o.close();
  });
});
