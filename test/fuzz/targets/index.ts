// Every fuzz target, in the order the runner drives them. A new parser or reader joins here.

import type { FuzzTarget } from '../harness.ts';
import { jsonTarget } from './json.ts';
import { xmlTarget } from './xml.ts';
import { sqlTargets } from './sql.ts';
import { listTarget } from './list.ts';
import { csvTarget } from './csv.ts';
import { detectTarget } from './detect.ts';
import { grpcWireTarget } from './grpc-wire.ts';
import { canonicalPathTarget } from './canonical-path.ts';
import { canonicalHostTarget } from './canonical-host.ts';
import { bodyKindTarget } from './body-kind.ts';
import { httpHeadTarget } from './http-head.ts';
import { clientHelloTarget } from './client-hello.ts';

export const TARGETS: readonly FuzzTarget<any>[] = [
  jsonTarget,
  xmlTarget,
  ...sqlTargets,
  listTarget,
  csvTarget,
  detectTarget,
  grpcWireTarget,
  canonicalPathTarget,
  canonicalHostTarget,
  bodyKindTarget,
  httpHeadTarget,
  clientHelloTarget,
];
