// Heavy gRPC messages are protected in a protection worker (the engine's offload, above
// limits.workers.inlineBytes), light ones on the event loop: the same bytes either way, in the
// order they came, the same counts, and a message that cannot be protected ends the call with the
// same status and message as on the event loop. Also: what a call protected is counted (its tally).

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createEngine, type ProtectionEngine } from '../../../src/engine/engine.ts';
import { DEFAULT_MANIFESTS, testKeyring } from '../../helpers/engine.ts';
import { CHAT, frame, runCall, shopPhase, shopRoot, unframe } from './helpers.ts';

const INLINE_BYTES = 4096;
const offloading: ProtectionEngine = createEngine({
  manifestsDir: DEFAULT_MANIFESTS,
  keyring: testKeyring(),
  limits: { workers: { max: 1, inlineBytes: INLINE_BYTES, timeoutMs: 60_000, idleMs: 60_000, nice: 0 } },
});
const inline: ProtectionEngine = createEngine({ manifestsDir: DEFAULT_MANIFESTS, keyring: testKeyring(), limits: { workers: { max: 0, inlineBytes: 0, timeoutMs: 60_000, idleMs: 60_000 } } });
after(() => offloading.close());

const Customer = shopRoot().lookupType('shop.v1.Customer');
const encode = (obj: Record<string, unknown>): Buffer => Buffer.from(Customer.encode(Customer.fromObject(obj)).finish());
const person = (i: number, notesBytes: number) => ({
  name: `Jane Doe${i}`,
  email: `jane${i}@example.com`,
  cards: [{ card_number: '4111 1111 1111 1111', id: i }],
  notes: `call 4111 1111 1111 1111 ${'x'.repeat(notesBytes)}`,
  salary: 52000,
});

test('heavy messages go to a worker and come back as the event loop writes them, in order, with the same counts', async () => {
  // Small, heavy, small, heavy: the stream waits for each heavy one, so order holds.
  const sizes = [10, 3 * INLINE_BYTES, 20, 2 * INLINE_BYTES];
  const input = Buffer.concat(sizes.map((n, i) => frame(encode(person(i, n)))));
  for (const jobType of ['Mask', 'Pseudonymise']) {
    const before = offloading.workerStats().started;
    const viaWorker = await runCall(shopPhase(offloading, { manifest: 'customer', jobType }, 'request', 1 << 20), input, { path: CHAT, chunk: 1000 });
    const viaLoop = await runCall(shopPhase(inline, { manifest: 'customer', jobType }, 'request', 1 << 20), input, { path: CHAT, chunk: 1000 });
    assert.equal(viaWorker.error, undefined, jobType);
    assert.ok(viaWorker.out.equals(viaLoop.out), `${jobType}: the same bytes as on the event loop`);
    assert.equal(unframe(viaWorker.out).length, 4);
    assert.ok(!viaWorker.out.includes('jane1@example.com') && !viaWorker.out.includes('4111 1111 1111 1111'), jobType);
    // name, email, card number and the card in the notes: 4 values per message.
    assert.deepEqual(viaWorker.tally, { valuesProtected: 16, valuesFailed: 0 }, jobType);
    assert.deepEqual(viaLoop.tally, viaWorker.tally, jobType);
    if (jobType === 'Mask') assert.ok(offloading.workerStats().started > before || offloading.workerStats().alive > 0, 'a worker ran');
  }
});

test('a heavy message that cannot be protected ends the call as it does on the event loop; the messages before it went on', async () => {
  const anonymise = (engine: ProtectionEngine) => shopPhase(engine, { manifest: 'customer', jobType: 'Anonymise' }, 'request', 1 << 20);
  // Anonymise gives text for the int64 salary: the call ends (FAILED_PRECONDITION), naming no value.
  const input = Buffer.concat([frame(encode({ name: 'Al' })), frame(encode(person(1, 3 * INLINE_BYTES))), frame(encode({ name: 'Bo' }))]);
  const viaWorker = await runCall(anonymise(offloading), input, { path: CHAT });
  const viaLoop = await runCall(anonymise(inline), input, { path: CHAT });
  assert.equal(viaWorker.error?.status, 9);
  assert.equal(viaWorker.error?.grpcMessage, viaLoop.error?.grpcMessage);
  assert.match(viaWorker.error!.grpcMessage, /^message 2: \$\.salary is of type int64/);
  assert.equal(unframe(viaWorker.out).length, 1, 'the message before is sent, nothing of the failed one or after');

  // Bytes that are not a message: INTERNAL with the position, the same text.
  const broken = Buffer.concat([encode(person(2, 3 * INLINE_BYTES)), Buffer.from([0x12, 0x09, 0x0a, 0x10])]);
  const mask = (engine: ProtectionEngine) => shopPhase(engine, { manifest: 'customer', jobType: 'Mask' }, 'request', 1 << 20);
  const w = await runCall(mask(offloading), frame(broken));
  const l = await runCall(mask(inline), frame(broken));
  assert.equal(w.error?.status, 13);
  assert.equal(w.error?.grpcMessage, l.error?.grpcMessage);
  assert.ok(!/Jane|4111|xxxx/.test(w.error!.grpcMessage));
  assert.equal(w.out.length, 0);
});

test('with the default inlineBytes (32 KiB) a 1 KB message never reaches the pool; a 40 KB one does', async () => {
  const defaults: ProtectionEngine = createEngine({
    manifestsDir: DEFAULT_MANIFESTS,
    keyring: testKeyring(),
    limits: { workers: { max: 1, inlineBytes: 32 * 1024, timeoutMs: 60_000, idleMs: 60_000, nice: 0 } },
  });
  try {
    const phase = shopPhase(defaults, { manifest: 'customer', jobType: 'Mask' }, 'request', 1 << 20);
    // The bench's unary call: ~1 KB of protobuf (a note of ~900 characters, the personal fields).
    const light = frame(encode(person(1, 900)));
    for (let i = 0; i < 50; i++) {
      const r = await runCall(phase, light, { path: CHAT });
      assert.equal(r.error, undefined);
    }
    assert.deepEqual(defaults.workerStats(), { alive: 0, started: 0 }, 'no worker was started for 50 light messages');
    const heavy = await runCall(phase, frame(encode(person(2, 40 * 1024))), { path: CHAT });
    assert.equal(heavy.error, undefined);
    assert.equal(defaults.workerStats().started, 1, 'the heavy message went to the pool');
  } finally {
    await defaults.close();
  }
});
