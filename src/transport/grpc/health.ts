// grpc.health.v1.Health: SERVING while the gateway is ready (config, manifests and keys loaded),
// NOT_SERVING otherwise and from the moment shutdown begins.

import {
  status,
  type handleServerStreamingCall,
  type handleUnaryCall,
  type ServerWritableStream,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { PROTECT_SERVICE_NAME } from './proto.ts';

type ServingStatus = 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';
interface HealthCheckRequest {
  service: string;
}
interface HealthCheckResponse {
  status: ServingStatus;
}

/** '' is the server as a whole; the other name is the one service it hosts. */
const KNOWN_SERVICES = new Set(['', PROTECT_SERVICE_NAME]);

export interface HealthService {
  readonly implementation: UntypedServiceImplementation;
  /** Reports NOT_SERVING from now on and ends every Watch stream, so shutdown is not held up by them. */
  shutdown(): void;
}

/** `pollMs`: how often Watch streams re-read `isReady` to report changes. */
export function createHealthService(isReady: () => boolean, pollMs = 1000): HealthService {
  let shuttingDown = false;
  const watches = new Set<{ call: ServerWritableStream<HealthCheckRequest, HealthCheckResponse>; timer: NodeJS.Timeout }>();

  const current = (): ServingStatus => (!shuttingDown && isReady() ? 'SERVING' : 'NOT_SERVING');

  const Check: handleUnaryCall<HealthCheckRequest, HealthCheckResponse> = (call, callback) => {
    if (!KNOWN_SERVICES.has(call.request.service)) {
      callback({ code: status.NOT_FOUND, details: 'Unknown service' });
      return;
    }
    callback(null, { status: current() });
  };

  const Watch: handleServerStreamingCall<HealthCheckRequest, HealthCheckResponse> = (call) => {
    const known = KNOWN_SERVICES.has(call.request.service);
    const read = (): ServingStatus => (known ? current() : 'SERVICE_UNKNOWN');
    let last = read();
    call.write({ status: last });
    const timer = setInterval(() => {
      const now = read();
      if (now !== last) {
        last = now;
        call.write({ status: now });
      }
    }, pollMs);
    timer.unref();
    const entry = { call, timer };
    watches.add(entry);
    call.on('cancelled', () => {
      clearInterval(timer);
      watches.delete(entry);
    });
  };

  return {
    implementation: { Check, Watch } as UntypedServiceImplementation,
    shutdown(): void {
      shuttingDown = true;
      for (const { call, timer } of watches) {
        clearInterval(timer);
        call.write({ status: 'NOT_SERVING' });
        call.end();
      }
      watches.clear();
    },
  };
}
