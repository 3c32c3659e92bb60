// The two messages of grpc.health.v1 (proto/grpc/health/v1/health.proto) in protobuf wire format:
// HealthCheckRequest { string service = 1 } and HealthCheckResponse { ServingStatus status = 1 }.
// Written by hand, like the ProtectValues codec, so that starting the gRPC door loads neither
// @grpc/proto-loader nor protobufjs (~35 ms and 4 MB at start; docs/performance.md). A test checks
// these against protobufjs reading the .proto files.

export type ServingStatus = 'UNKNOWN' | 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';
const STATUS_NUMBERS: Record<ServingStatus, number> = { UNKNOWN: 0, SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3 };
const STATUS_NAMES: readonly ServingStatus[] = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'];

export interface HealthCheckRequest {
  service: string;
}
export interface HealthCheckResponse {
  status: ServingStatus;
}

/** Field 1 of a message, skipping every other field; throws on bytes that are no message. */
function readField1(buf: Buffer, wanted: 0 | 2): number | Buffer | undefined {
  let pos = 0;
  let found: number | Buffer | undefined;
  const varint = (): number => {
    let result = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      if (pos >= buf.length) throw new Error('truncated varint');
      const b = buf[pos++];
      result += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return result;
    }
    // Longer varints (negative int64 values) are skipped whole.
    while (pos < buf.length && buf[pos++] >= 0x80);
    return result;
  };
  while (pos < buf.length) {
    const key = varint();
    const field = Math.floor(key / 8);
    const wireType = key % 8;
    if (field === 0) throw new Error('field number 0');
    if (wireType === 0) {
      const v = varint();
      if (field === 1 && wanted === 0) found = v;
    } else if (wireType === 2) {
      const length = varint();
      if (pos + length > buf.length) throw new Error('truncated field');
      if (field === 1 && wanted === 2) found = buf.subarray(pos, pos + length);
      pos += length;
    } else if (wireType === 1 || wireType === 5) {
      pos += wireType === 1 ? 8 : 4;
      if (pos > buf.length) throw new Error('truncated field');
    } else throw new Error(`wire type ${wireType}`);
  }
  return found;
}

export function decodeHealthCheckRequest(buf: Buffer): HealthCheckRequest {
  const service = readField1(buf, 2) as Buffer | undefined;
  return { service: service === undefined ? '' : service.toString('utf8') };
}

export function encodeHealthCheckRequest(request: HealthCheckRequest): Buffer {
  const service = Buffer.from(request.service ?? '', 'utf8');
  if (service.length === 0) return Buffer.alloc(0);
  if (service.length >= 0x80) {
    const length: number[] = [];
    for (let n = service.length; ; n >>>= 7) {
      if (n < 0x80) {
        length.push(n);
        break;
      }
      length.push((n & 0x7f) | 0x80);
    }
    return Buffer.concat([Buffer.from([0x0a, ...length]), service]);
  }
  return Buffer.concat([Buffer.from([0x0a, service.length]), service]);
}

export function encodeHealthCheckResponse(response: HealthCheckResponse): Buffer {
  const n = STATUS_NUMBERS[response.status] ?? 0;
  return n === 0 ? Buffer.alloc(0) : Buffer.from([0x08, n]); // proto3: the default value is not written
}

export function decodeHealthCheckResponse(buf: Buffer): HealthCheckResponse {
  const n = (readField1(buf, 0) as number | undefined) ?? 0;
  return { status: STATUS_NAMES[n] ?? 'UNKNOWN' };
}
