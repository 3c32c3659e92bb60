// Shared by the gRPC message protection tests and bench: the test .proto types (encoded with
// protobufjs, as a client would), a route phase over them with the real engine, and framing.

import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import protobuf from 'protobufjs';
import type { RoutePhase } from '../../../src/config/types.ts';
import type { Engine } from '../../../src/engine/types.ts';
import { compilePhase } from '../../../src/proxy/exchange/phase.ts';
import { GrpcCallError, type GrpcPhase, type GrpcTally } from '../../../src/proxy/grpc-egress/contract.ts';
import { grpcPhase } from '../../../src/proxy/grpc-egress/grpc-phase.ts';
import { loadGrpcMethods } from '../../../src/proxy/grpc-egress/route-descriptors.ts';

export const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
export const SHOP_FILES = { protoFiles: [join(FIXTURES, 'shop.proto')], includeDirs: [join(FIXTURES, 'include')] };
export const PUT = '/shop.v1.Customers/Put';
export const CHAT = '/shop.v1.Customers/Chat';

/** The test types as a client's protobufjs reads them. */
export function shopRoot(): protobuf.Root {
  const root = new protobuf.Root();
  root.resolvePath = (origin, target) => (target.startsWith('common/') ? join(FIXTURES, 'include', target) : protobuf.util.path.resolve(origin, target));
  root.loadSync(SHOP_FILES.protoFiles[0]!, { keepCase: true });
  root.resolveAll();
  return root;
}

const methods = loadGrpcMethods(SHOP_FILES, () => true);

/** A route phase over the test types, built the way compileRouteSet builds it. */
export function shopPhase(engine: Engine, phase: RoutePhase, direction: 'request' | 'response' = 'request', maxMessageBytes = 64 * 1024): GrpcPhase {
  return compilePhase(phase, engine, (job) => grpcPhase({ methods, direction, job, engine, maxMessageBytes })).grpc!;
}

export function frame(message: Uint8Array, flag: 0 | 1 = 0): Buffer {
  const out = Buffer.alloc(5 + message.length);
  out[0] = flag;
  out.writeUInt32BE(message.length, 1);
  Buffer.from(message.buffer, message.byteOffset, message.length).copy(out, 5);
  return out;
}

/** The messages of a framed stream, with their flags. */
export function unframe(bytes: Buffer): { flag: number; message: Buffer }[] {
  const out: { flag: number; message: Buffer }[] = [];
  for (let p = 0; p < bytes.length; ) {
    const len = bytes.readUInt32BE(p + 1);
    out.push({ flag: bytes[p]!, message: bytes.subarray(p + 5, p + 5 + len) });
    p += 5 + len;
  }
  return out;
}

/**
 * Writes `input` to a fresh call transform in pieces of `chunk` bytes (0: one write) and collects
 * what it emits, how it ended and what it counted.
 */
export function runCall(
  phase: GrpcPhase,
  input: Buffer,
  options: { path?: string; encoding?: string; chunk?: number } = {},
): Promise<{ out: Buffer; error: GrpcCallError | undefined; tally: GrpcTally }> {
  const tally: GrpcTally = { valuesProtected: 0, valuesFailed: 0 };
  const t = phase.messages({ path: options.path ?? PUT, encoding: options.encoding, requestId: 'test', tally });
  const parts: Buffer[] = [];
  t.on('data', (b: Buffer) => parts.push(b));
  return new Promise((resolve, reject) => {
    t.on('error', (err) => {
      if (err instanceof GrpcCallError) resolve({ out: Buffer.concat(parts), error: err, tally });
      else reject(err);
    });
    t.on('end', () => resolve({ out: Buffer.concat(parts), error: undefined, tally }));
    const size = options.chunk ?? 0;
    if (size <= 0) t.end(input);
    else {
      for (let p = 0; p < input.length; p += size) t.write(input.subarray(p, p + size));
      t.end();
    }
  });
}
