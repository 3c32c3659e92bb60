// Shutdown of relayed connections (tunnel-drain.ts): a tunnel is closed once its answer has gone
// back to the app and it stayed quiet, kept while a request waits for its answer, and taken as idle
// when it stays silent from the start of the drain. Driven by a fake clock, on fake sockets.

import assert from 'node:assert/strict';
import type { Duplex } from 'node:stream';
import { mock, test } from 'node:test';
import { drainTunnels, markUpstreamSide } from '../../src/proxy/forwarding/tunnel-drain.ts';

interface FakeSocket {
  bytesRead: number;
  bytesWritten: number;
  destroyed: boolean;
  destroy(): void;
}

function fakeSet(): { sockets: Set<Duplex>; make(upstream?: boolean): FakeSocket } {
  const sockets = new Set<Duplex>();
  return {
    sockets,
    make(upstream = false) {
      const s: FakeSocket = {
        bytesRead: 10,
        bytesWritten: 10,
        destroyed: false,
        destroy() {
          s.destroyed = true;
          sockets.delete(s as unknown as Duplex);
        },
      };
      if (upstream) markUpstreamSide(s as unknown as Duplex);
      sockets.add(s as unknown as Duplex);
      return s;
    },
  };
}

test('tunnels close between exchanges, stay while a request waits, and the silent ones close after a second', async () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    let now = 0;
    const { sockets, make } = fakeSet();
    const silent = make();
    const waiting = make(); // app side: a request goes up, no answer yet
    const answered = make(); // app side: an answer comes back
    const answeredUp = make(true); // the upstream side of a relay whose answer comes back
    const drain = drainTunnels(sockets, () => now);
    const advance = (ms: number): void => {
      for (let t = 0; t < ms; t += 25) {
        now += 25;
        mock.timers.tick(25);
      }
    };
    waiting.bytesRead += 500; // from the app
    answered.bytesWritten += 700; // to the app
    answeredUp.bytesRead += 700; // from the upstream, i.e. to the app
    advance(50);
    assert.equal(answered.destroyed, false, 'an answer still arriving is not cut');
    advance(100);
    assert.equal(answered.destroyed, true);
    assert.equal(answeredUp.destroyed, true);
    assert.equal(waiting.destroyed, false);
    assert.equal(silent.destroyed, false);
    advance(1000);
    assert.equal(silent.destroyed, true, 'silent since the drain began: idle');
    assert.equal(waiting.destroyed, false, 'a request waiting for its answer is kept');
    // Its answer arrives: closed once quiet.
    waiting.bytesWritten += 300;
    advance(150);
    assert.equal(waiting.destroyed, true);
    assert.equal(sockets.size, 0);
    await drain.done;
  } finally {
    mock.timers.reset();
  }
});

test('stop() ends the watching (the grace timer cuts what is left)', async () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    const { sockets, make } = fakeSet();
    const waiting = make();
    let now = 0;
    const drain = drainTunnels(sockets, () => now);
    waiting.bytesRead += 1;
    now += 25;
    mock.timers.tick(25);
    drain.stop();
    await drain.done;
    assert.equal(waiting.destroyed, false);
  } finally {
    mock.timers.reset();
  }
});
