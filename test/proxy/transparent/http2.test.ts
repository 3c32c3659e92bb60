// HTTP/2 on the transparent listener (loopback, injected original destinations): TLS interception
// whose ALPN chooses h2, and h2c with prior knowledge to a routed address, are read stream by
// stream and protected like HTTP/1.1; gRPC calls (grpc-js, h2c) stream through the route's gRPC
// phase (a fake one here, see ../http2-helpers.ts).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect as http2Connect, type ClientHttp2Session } from 'node:http2';
import { connect as tlsConnect } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { CARD, route, tempDir } from '../helpers.ts';
import { bidiInTurn, fakeGrpcPhase, h2Request, SECRET, startH2Upstream, type H2Upstream } from '../http2-helpers.ts';
import { namedPki, startTransparentProxy, type TransparentProxy } from './helpers.ts';

const customer = JSON.stringify({ cardNumber: CARD, note: 'kept' });

describe('transparent listener: HTTP/2', { timeout: 30_000 }, () => {
  let secure: H2Upstream;
  let clear: H2Upstream;
  let grpcServer: grpc.Server;
  let grpcPort: number;
  const grpcReceived: string[] = [];
  let tp: TransparentProxy;

  before(async () => {
    const pki = namedPki(tempDir(), ['api.partner.test', 'localhost', '127.0.0.1']);
    secure = await startH2Upstream({ tls: pki });
    clear = await startH2Upstream();
    grpcServer = new grpc.Server();
    const pass = { requestSerialize: (b: Buffer) => b, requestDeserialize: (b: Buffer) => b, responseSerialize: (b: Buffer) => b, responseDeserialize: (b: Buffer) => b };
    grpcServer.addService({ Bidi: { path: '/test.Echo/Bidi', requestStream: true, responseStream: true, ...pass } } as unknown as grpc.ServiceDefinition, {
      Bidi: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
        call.on('data', (m: Buffer) => {
          grpcReceived.push(m.toString('latin1'));
          call.write(Buffer.from(`echo:${m.toString('latin1')}`, 'latin1'));
        });
        call.on('end', () => call.end());
        call.on('error', () => undefined);
      },
    });
    grpcPort = await new Promise<number>((resolve, reject) => grpcServer.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
    const mask = { manifest: 'customer', jobType: 'Mask' } as const;
    tp = await startTransparentProxy({
      routes: [
        route('tls-h2', { match: { host: 'api.partner.test', port: secure.port, path: '/v1/customers/**' }, request: mask }),
        route('h2c', { match: { host: '127.0.0.1', port: clear.port, path: '/v1/customers/**' }, request: mask }),
        route('grpc', { match: { host: '127.0.0.1', port: grpcPort, path: '/test.Echo/*' }, request: mask, response: mask }),
      ],
      upstreamCa: pki.caFile,
      hosts: { 'api.partner.test': ['127.0.0.1'] },
      grpcPhases: (r, which) => (r.name === 'grpc' ? fakeGrpcPhase(which === 'request' ? 'REQ-MASKED' : 'RES-MASKED', []) : undefined),
    });
  });
  after(async () => {
    await tp.close();
    await secure.close();
    await clear.close();
    grpcServer.forceShutdown();
  });

  const post = (path: string, authority: string, scheme: string): Record<string, string> => ({ ':method': 'POST', ':path': path, ':authority': authority, ':scheme': scheme, 'content-type': 'application/json' });

  test('TLS whose ALPN chooses h2 (the app offers only h2): routed stream protected, unrouted one untouched', async () => {
    tp.redirectNext({ address: '127.0.0.1', port: secure.port, family: 4 });
    const authority = `api.partner.test:${secure.port}`;
    const session: ClientHttp2Session = http2Connect(`https://${authority}`, {
      createConnection: () => tlsConnect({ host: '127.0.0.1', port: tp.port, servername: 'api.partner.test', ca: tp.caPem, ALPNProtocols: ['h2'] }),
    });
    session.on('error', () => undefined);
    try {
      await once(session, 'connect');
      const before = secure.received.length;
      assert.equal((await h2Request(session, post('/v1/customers/1', authority, 'https'), customer)).status, 200);
      const got = JSON.parse(secure.received[before]!.body.toString('utf8')) as Record<string, string>;
      assert.notEqual(got.cardNumber, CARD);
      assert.equal(got.note, 'kept');
      assert.equal(secure.received[before]!.headers[':authority'], authority);
      assert.equal((await h2Request(session, post('/v2/other', authority, 'https'), customer)).status, 200);
      assert.equal(secure.received.at(-1)!.body.toString('utf8'), customer);
    } finally {
      session.close();
    }
  });

  test('h2c with prior knowledge to a routed address: read and protected, not refused', async () => {
    tp.redirectNext({ address: '127.0.0.1', port: clear.port, family: 4 });
    const authority = `127.0.0.1:${clear.port}`;
    const session = http2Connect(`http://127.0.0.1:${tp.port}`);
    session.on('error', () => undefined);
    try {
      const before = clear.received.length;
      const r = await h2Request(session, post('/v1/customers/2', authority, 'http'), customer);
      assert.equal(r.status, 200);
      assert.ok(!clear.received[before]!.body.toString('utf8').includes(CARD));
      // A :scheme other than the connection's is refused (400), nothing upstream.
      const wrong = await h2Request(session, post('/v1/customers/3', authority, 'https'), customer);
      assert.equal(wrong.status, 400);
      assert.equal(clear.received.length, before + 1);
    } finally {
      session.close();
    }
  });

  test('grpc-js bidi over h2c to a routed address: each message through the gRPC phase both ways', async () => {
    tp.redirectNext({ address: '127.0.0.1', port: grpcPort, family: 4 });
    const client = new grpc.Client(`127.0.0.1:${tp.port}`, grpc.credentials.createInsecure(), { 'grpc.default_authority': `127.0.0.1:${grpcPort}` });
    try {
      const before = grpcReceived.length;
      const call = client.makeBidiStreamRequest('/test.Echo/Bidi', (b: Buffer) => b, (b: Buffer) => b);
      const { replies, code } = await bidiInTurn(call, [0, 1, 2].map((i) => `m${i} ${SECRET}`));
      assert.equal(code, grpc.status.OK);
      assert.deepEqual(grpcReceived.slice(before), ['m0 REQ-MASKED', 'm1 REQ-MASKED', 'm2 REQ-MASKED']);
      assert.deepEqual(replies, ['echo:m0 REQ-MASKED', 'echo:m1 REQ-MASKED', 'echo:m2 REQ-MASKED']);
    } finally {
      client.close();
    }
  });
});
