// Overload gates (core/overload.ts) counted directly: request and byte bounds per door, chunked
// bytes counted as they arrive, release exactly once, and the event-loop guard after a real stall.
// The loop guards' defaults on a stubbed clock and sampler: a busy loop that keeps up is not shed,
// a loop whose turns grow (requests queueing) is.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_OVERLOAD, Overload, type OverloadDoor, type ShedReason } from '../../src/core/overload.ts';

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
    assert.match(o.saturated() ?? '', /event loop late/);
    assert.ok(o.loopDelayMs() >= 0);
    // Watchdog only: returns as soon as the guard opens again (it holds for one second).
    for (let i = 0; i < 200 && g.saturation() !== undefined; i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(g.saturation(), undefined);
    o.close();
  });

  describe('event-loop guards on a stubbed clock (defaults)', () => {
    const stubbed = (overrides: Partial<typeof DEFAULT_OVERLOAD> = {}) => {
      const clock = { t: 0 };
      const sheds: ShedReason[] = [];
      const o = new Overload({ ...DEFAULT_OVERLOAD, ...overrides }, { now: () => clock.t, sampler: false, onShed: (_, r) => sheds.push(r) });
      // One 100 ms sampling interval: the clock moves on, the guard reads the sample, one request arrives.
      const interval = (lateMs: number, utilisation: number): ShedReason | 'admitted' => {
        clock.t += 100 + lateMs;
        o.loop.record({ lateMs, utilisation });
        const a = o.gate('proxy').admit(1024);
        if (typeof a === 'string') return a;
        a.release();
        return 'admitted';
      };
      return { o, sheds, interval, clock };
    };

    it('shed nothing while the loop is busy all the time but keeps up (utilisation 0.99, late 2-8 ms)', () => {
      const { o, sheds, interval } = stubbed();
      assert.equal(o.config.maxEventLoopUtilization, 1, 'the utilisation guard is opt-in');
      const outcomes = Array.from({ length: 300 }, (_, i) => interval(2 + (i % 7), 0.99));
      assert.equal(outcomes.filter((r) => r === 'admitted').length, 300);
      assert.deepEqual(sheds, []);
      assert.ok(o.loopUtilisation() > 0.95);
      assert.equal(o.saturated(), undefined);
      o.close();
    });

    it('shed while the median lateness over a second is above maxEventLoopLagMs, and admit again once turns shorten', () => {
      const { o, sheds, interval } = stubbed();
      for (let i = 0; i < 30; i++) assert.equal(interval(5, 0.95), 'admitted');
      // Requests queue: every turn is longer, the timer fires later and later.
      const growing = [20, 40, 60, 80, 100, 120, 140, 160, 180, 200].map((ms) => interval(ms, 1));
      // The median of the last ten samples: 50 ms at the 7th growing one (not above), 70 ms at the 8th.
      assert.deepEqual(growing, ['admitted', 'admitted', 'admitted', 'admitted', 'admitted', 'admitted', 'admitted', 'event-loop', 'event-loop', 'event-loop']);
      assert.match(o.saturated() ?? '', /event loop late/);
      // Shedding shortens the turns: once most of the last second's samples are short, work is admitted.
      const recovering = Array.from({ length: 10 }, () => interval(3, 0.7));
      assert.deepEqual(recovering, ['event-loop', 'event-loop', 'event-loop', 'event-loop', 'event-loop', 'admitted', 'admitted', 'admitted', 'admitted', 'admitted']);
      assert.equal(sheds.length, 8);
      assert.ok(sheds.every((r) => r === 'event-loop'));
      o.close();
    });

    it('one long turn (a GC pause, one inline parse) sheds nothing; two stalls in a row past maxEventLoopDelayMs shed for a second', () => {
      const { o, sheds, interval, clock } = stubbed();
      for (let i = 0; i < 10; i++) interval(4, 0.5);
      assert.equal(interval(900, 1), 'admitted');
      assert.equal(interval(1200, 1), 'admitted', 'one stall past 1000 ms alone');
      assert.equal(interval(1500, 1), 'event-loop');
      // Shut for one second of the clock: nine more 104 ms intervals, then open.
      const shutAt = clock.t;
      for (let i = 0; i < 9; i++) assert.equal(interval(4, 0.5), 'event-loop');
      assert.ok(clock.t - shutAt < 1000);
      assert.equal(interval(4, 0.5), 'admitted');
      assert.equal(sheds.length, 10);
      o.close();
    });

    it('shed nothing for lateness while the loop is mostly idle (kept off the CPU by other processes, not queueing)', () => {
      const { o, sheds, interval } = stubbed();
      const outcomes = Array.from({ length: 50 }, () => interval(300, 0.5));
      assert.equal(outcomes.filter((r) => r === 'admitted').length, 50);
      assert.deepEqual(sheds, []);
      assert.ok(o.loop.lagMs > 50);
      o.close();
    });

    it('with maxEventLoopLagMs 0 never sheds for lateness below the stall bound', () => {
      const { o, sheds, interval } = stubbed({ maxEventLoopLagMs: 0 });
      for (let i = 0; i < 50; i++) assert.equal(interval(400, 1), 'admitted');
      assert.deepEqual(sheds, []);
      o.close();
    });

    it('shed on utilisation only when it is opted into', () => {
      const { o, interval } = stubbed({ maxEventLoopUtilization: 0.9 });
      const outcomes = Array.from({ length: 40 }, () => interval(2, 1));
      // The average crosses 0.9 after 22 samples from idle (1 - 0.9^n > 0.9).
      assert.equal(outcomes.indexOf('event-loop'), 21);
      assert.equal(outcomes.filter((r) => r === 'admitted').length, 21);
      o.close();
    });
  });
});
