// The gRPC door's public surface: main.ts starts it with startGrpcServer.

export { startGrpcServer, type GrpcServerDeps } from './server.ts';
export type { RunningServer } from './running-server.ts';
export { PROTO_DIR } from './proto.ts';
