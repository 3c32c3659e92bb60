// gRPC route protection, streaming: 1 KB Customer messages (test/proxy/grpc-egress/fixtures/shop.proto)
// through one call's transform (framing, wire-level read, Mask with the `customer` manifest, its
// detection by content on the other strings, re-encoding), next to the same-run baseline: protobufjs
// decode + encode of the same message (what a decode-protect-encode design pays before protecting
// anything). Goal (issue 22): >= 50,000 protected messages/s per core. One thread: per core as is.

import { testEngine } from '../test/helpers/engine.ts';
import { CHAT, frame, shopPhase, shopRoot } from '../test/proxy/grpc-egress/helpers.ts';
import { timeLoop } from './timing.ts';

const engine = testEngine();
const Customer = shopRoot().lookupType('shop.v1.Customer');

/** About 1 KB: four personal fields among ordinary data, most of it strings detection must read. */
function message(i: number): Buffer {
  return Buffer.from(
    Customer.encode(
      Customer.fromObject({
        name: 'Jane Doe',
        email: `jane.doe${i % 10}@example.com`,
        cards: [{ card_number: '4111 1111 1111 1111', id: i }],
        inner: { ssn: '123-45-6789' },
        scores: [1, 2, 3, 4, 5, 6, 7, 8],
        salary: 52000 + i,
        attributes: { tier: 'gold', region: 'eu-west-1', channel: 'partner-api', locale: 'en-GB' },
        tags: ['priority', 'newsletter', 'beta', 'loyalty', 'vip', 'b2b'],
        notes: 'Customer asked for a callback about the renewal of the annual plan; prefers mornings. '.repeat(8),
        scalars: { d: 1.5, f: 2.5, i32: i, i64: i * 1000, b: true, note: 'order 7781 shipped from warehouse 12' },
      }),
    ).finish(),
  );
}

const MESSAGES = 256;
const messages = Array.from({ length: MESSAGES }, (_, i) => message(i));
const batch = Buffer.concat(messages.map((m) => frame(m)));
const size = messages.reduce((n, m) => n + m.length, 0) / MESSAGES;
console.log(`message: ${size.toFixed(0)} bytes on average, ${MESSAGES} per write; load average ${(await import('node:fs')).readFileSync('/proc/loadavg', 'utf8').trim()}`);

const baselineFn = (): void => {
  for (const m of messages) Customer.encode(Customer.decode(m)).finish();
};

const phase = shopPhase(engine, { manifest: 'customer', jobType: 'Mask' });
const call = phase.messages({ path: CHAT, encoding: undefined, requestId: 'bench' });
let received = 0;
call.on('data', (b: Buffer) => (received += b.length));
call.on('error', (err) => {
  console.error('call failed:', (err as Error).message);
  process.exit(1);
});
/** One batch through the call, waiting for its output so nothing piles up between rounds. */
const oursOnce = (): Promise<void> =>
  new Promise((resolve) => {
    call.write(batch);
    setImmediate(resolve);
  });

async function timeAsync(budgetMs: number): Promise<number> {
  let n = 0;
  const start = performance.now();
  while (performance.now() - start < budgetMs) {
    await oursOnce();
    n++;
  }
  return (n * MESSAGES * 1000) / (performance.now() - start);
}

for (let i = 0; i < 20; i++) {
  baselineFn();
  await oursOnce();
}
let baseline = 0;
let ours = 0;
// Alternate short rounds and keep the best of each, so drift on a shared machine hits both alike.
for (let round = 0; round < 5; round++) {
  baseline = Math.max(baseline, timeLoop(baselineFn, 500).perSecond * MESSAGES);
  ours = Math.max(ours, await timeAsync(500));
}
call.end();
console.log(`${'baseline protobufjs decode + encode'.padEnd(44)} ${baseline.toFixed(0).padStart(9)} messages/s`);
console.log(`${'dpg gRPC route (Mask, customer, detection)'.padEnd(44)} ${ours.toFixed(0).padStart(9)} messages/s`);
console.log(`ratio: ${(ours / baseline).toFixed(2)}x of baseline; goal >= 50,000 messages/s per core: ${ours >= 50_000 ? 'met' : 'not met'}`);
if (received === 0) process.exit(1);
