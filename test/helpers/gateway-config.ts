// A complete GatewayConfig for whole-process tests: every listener on 127.0.0.1:0, the proxy off,
// the identity fixtures of identity.ts; each door's tests override the section they exercise.

import { join } from 'node:path';
import type { GatewayConfig, GrpcConfig, HttpConfig, IdentityConfig, LimitsConfig } from '../../src/config/types.ts';
import { identityConfig } from './identity.ts';

export interface TestConfigOverrides {
  readonly http?: Partial<HttpConfig>;
  readonly grpc?: Partial<GrpcConfig>;
  readonly identity?: Partial<IdentityConfig>;
  readonly limits?: Partial<LimitsConfig>;
}

export function testGatewayConfig(dataDir: string, overrides: TestConfigOverrides = {}): GatewayConfig {
  return {
    file: join(dataDir, 'gateway.yaml'),
    dataDir,
    http: {
      listen: { host: '127.0.0.1', port: 0 },
      maxBodyBytes: 10 * 1024 * 1024,
      maxFileBytes: 2 * 1024 * 1024 * 1024,
      requireTokenForFileProtect: true,
      shutdownGraceMs: 2000,
      ...overrides.http,
    },
    grpc: { listen: { host: '127.0.0.1', port: 0 }, maxMessageBytes: 64 * 1024 * 1024, ...overrides.grpc },
    identity: identityConfig(join(dataDir, 'identity'), overrides.identity),
    keys: { source: 'generated' },
    manifests: join(dataDir, 'manifests'),
    proxy: { enabled: false, listen: { host: '127.0.0.1', port: 0 }, connectTimeoutMs: 1000, responseTimeoutMs: 1000, routes: [], reverse: [] },
    limits: { maxDepth: 256, maxRows: 1_000_000, maxValueLength: 1024 * 1024, maxDocumentBytes: 64 * 1024 * 1024, ...overrides.limits },
    logging: { level: 'info', bufferBytes: 8 * 1024 * 1024 },
  };
}
