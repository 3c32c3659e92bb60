// Real gRPC libraries on both sides: a @grpc/grpc-js client calls a @grpc/grpc-js server through a
// minimal node:http2 relay (a stand-in for the proxy's HTTP/2 interception, built on another branch)
// that passes each direction's DATA through the route's phases, as the contract (contract.ts) says.
// The server sees the protected fields; the client gets its own values back (Reconstruct).

import assert from 'node:assert/strict';
import { connect, constants, createServer, type ClientHttp2Session, type Http2Server, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import * as loader from '@grpc/proto-loader';
import { GrpcCallError, type GrpcPhase } from '../../../src/proxy/grpc-egress/contract.ts';
import { testEngine } from '../../helpers/engine.ts';
import { SHOP_FILES, shopPhase } from './helpers.ts';

const engine = testEngine();
const request = shopPhase(engine, { manifest: 'customer', jobType: 'Pseudonymise' });
const response = shopPhase(engine, { manifest: 'customer', jobType: 'Reconstruct' }, 'response');

type Customer = { name?: string; email?: string; cards?: { card_number?: string }[]; salary?: string };
const seen: Customer[] = [];
/** The compressed flag of each request message the relay read (first frame of each DATA chunk). */
const flags: number[] = [];
let server: grpc.Server;
let relay: Http2Server;
let upstream: ClientHttp2Session;
let client: grpc.Client & Record<string, (...args: unknown[]) => unknown>;

/** `grpc-message` as the gRPC spec encodes it: only `%` and bytes outside printable ASCII escaped. */
function grpcMessage(text: string): string {
  return Buffer.from(text, 'utf8').reduce((out, b) => out + (b < 0x20 || b > 0x7e || b === 0x25 ? `%${b.toString(16).toUpperCase().padStart(2, '0')}` : String.fromCharCode(b)), '');
}

/** Forwards one call, its messages through the phases; a GrpcCallError answers the call with its status. */
function relayStream(stream: import('node:http2').ServerHttp2Stream, headers: IncomingHttpHeaders, req: GrpcPhase, res: GrpcPhase): void {
  const path = String(headers[':path']);
  const forward: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) if (!k.startsWith(':') || k === ':method' || k === ':path') forward[k] = v;
  const up = upstream.request(forward);
  const fail = (err: Error): void => {
    up.close(constants.NGHTTP2_CANCEL);
    const status = err instanceof GrpcCallError ? err.status : 13;
    const message = err instanceof GrpcCallError ? err.grpcMessage : 'relay failed';
    if (!stream.headersSent) stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(status), 'grpc-message': grpcMessage(message) }, { endStream: true });
    else stream.close(constants.NGHTTP2_INTERNAL_ERROR);
  };
  const inbound = req.messages({ path, encoding: headers['grpc-encoding'] as string | undefined, requestId: 'relay', tally: { valuesProtected: 0, valuesFailed: 0 } });
  inbound.on('error', fail);
  stream.once('data', (chunk: Buffer) => flags.push(chunk[0]!));
  stream.pipe(inbound).pipe(up);
  let trailers: OutgoingHttpHeaders = {};
  up.on('response', (h) => {
    const back: OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(h)) if (!k.startsWith(':') || k === ':status') back[k] = v;
    if (h['grpc-status'] !== undefined) {
      stream.respond(back, { endStream: true }); // a trailers-only answer
      return;
    }
    stream.respond(back, { waitForTrailers: true });
    const outbound = res.messages({ path, encoding: h['grpc-encoding'] as string | undefined, requestId: 'relay', tally: { valuesProtected: 0, valuesFailed: 0 } });
    outbound.on('error', (err: Error) => {
      trailers = { 'grpc-status': String(err instanceof GrpcCallError ? err.status : 13), 'grpc-message': grpcMessage(err.message) };
      stream.end();
    });
    up.pipe(outbound).pipe(stream);
  });
  up.on('trailers', (t) => (trailers = { ...t }));
  stream.on('wantTrailers', () => stream.sendTrailers(trailers));
  up.on('error', () => stream.close(constants.NGHTTP2_INTERNAL_ERROR));
}

before(async () => {
  const def = loader.loadSync(SHOP_FILES.protoFiles, { includeDirs: SHOP_FILES.includeDirs, keepCase: true, longs: String });
  const pkg = grpc.loadPackageDefinition(def) as unknown as { shop: { v1: { Customers: grpc.ServiceClientConstructor } } };
  server = new grpc.Server();
  server.addService(pkg.shop.v1.Customers.service, {
    Put: (call: grpc.ServerUnaryCall<Customer, Customer>, cb: grpc.sendUnaryData<Customer>) => {
      seen.push(call.request);
      cb(null, call.request);
    },
    Chat: (call: grpc.ServerDuplexStream<Customer, Customer>) => {
      call.on('data', (c: Customer) => {
        seen.push(c);
        call.write(c);
      });
      call.on('end', () => call.end());
    },
  });
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
  upstream = connect(`http://127.0.0.1:${port}`);
  relay = createServer();
  relay.on('stream', (stream, headers) => relayStream(stream, headers, request, response));
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const relayPort = (relay.address() as AddressInfo).port;
  client = new pkg.shop.v1.Customers(`127.0.0.1:${relayPort}`, grpc.credentials.createInsecure(), { 'grpc.default_compression_algorithm': 2 }) as never;
});

after(async () => {
  client?.close();
  upstream?.close();
  await new Promise((r) => relay?.close(r));
  await new Promise<void>((r) => server?.tryShutdown(() => r()));
});

const JANE: Customer = { name: 'Jane Doe', email: 'jane.doe@example.com', cards: [{ card_number: '4111 1111 1111 1111' }], salary: '52000' };

test('unary (gzip-compressed by the client): the server gets pseudonyms, the client its own values back', async () => {
  seen.length = 0;
  flags.length = 0;
  const reply = await new Promise<Customer>((resolve, reject) => client.Put(JANE, (err: Error | null, r: Customer) => (err ? reject(err) : resolve(r))));
  assert.equal(seen.length, 1);
  assert.deepEqual(flags, [1], 'the client sent its message gzip-compressed');
  const there = seen[0]!;
  assert.notEqual(there.name, JANE.name);
  assert.notEqual(there.email, JANE.email);
  assert.notEqual(there.cards![0]!.card_number, JANE.cards![0]!.card_number);
  assert.equal(there.salary, '52000');
  assert.deepEqual({ name: reply.name, email: reply.email, card: reply.cards![0]!.card_number, salary: reply.salary }, { name: JANE.name, email: JANE.email, card: JANE.cards![0]!.card_number, salary: JANE.salary });
});

test('bidirectional streaming: every message protected on the way out and restored on the way back', async () => {
  seen.length = 0;
  const call = client.Chat() as unknown as grpc.ClientDuplexStream<Customer, Customer>;
  const replies: Customer[] = [];
  call.on('data', (c: Customer) => replies.push(c));
  const done = new Promise<void>((resolve, reject) => {
    call.on('end', resolve);
    call.on('error', reject);
  });
  for (let i = 0; i < 20; i++) call.write({ name: `Jane Doe${'e'.repeat(i)}`, email: `jane${i}@example.com` });
  call.end();
  await done;
  assert.equal(seen.length, 20);
  assert.ok(seen.every((c, i) => c.email !== `jane${i}@example.com` && c.email!.endsWith('@example.com')));
  assert.deepEqual(replies.map((c) => c.email), Array.from({ length: 20 }, (_, i) => `jane${i}@example.com`));
});

test('a message that cannot be protected ends the call with its status; the server never sees it', async () => {
  seen.length = 0;
  const anonymise = shopPhase(engine, { manifest: 'customer', jobType: 'Anonymise' });
  const listener = relay.listeners('stream')[0] as (...a: unknown[]) => void;
  relay.removeAllListeners('stream');
  relay.on('stream', (stream, headers) => relayStream(stream, headers, anonymise, response));
  try {
    const err = await new Promise<grpc.ServiceError>((resolve) => client.Put(JANE, (e: grpc.ServiceError | null) => resolve(e!)));
    assert.equal(err.code, grpc.status.FAILED_PRECONDITION);
    assert.match(err.details, /\$\.salary is of type int64/);
    assert.ok(!err.details.includes('52000') && !err.details.includes('Jane'));
    assert.equal(seen.length, 0);
  } finally {
    relay.removeAllListeners('stream');
    relay.on('stream', listener);
  }
});
