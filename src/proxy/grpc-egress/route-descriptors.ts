// The gRPC methods a route covers, read once from the .proto files or the descriptor set its `grpc`
// block names: every method of every service in them whose path (`/package.Service/Method`) the
// route's `match.path` matches, with the plans of its request and response message types.

import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import type * as Protobuf from 'protobufjs';
import type { RouteGrpc } from '../../config/types.ts';
import { messagePlan, type MessagePlan } from './message-plan.ts';
import { protoLibrary } from './proto-library.ts';

export interface GrpcMethodPlan {
  /** `/package.Service/Method`. */
  readonly path: string;
  readonly request: MessagePlan;
  readonly response: MessagePlan;
}

/**
 * Loads the route's descriptors and returns the methods `covers` selects, by path. Throws an Error
 * whose message names the file (and line, for a .proto that does not parse) or says that no method
 * matched; descriptors hold no payload, so the message is safe to show.
 */
export function loadGrpcMethods(grpc: RouteGrpc, covers: (path: string) => boolean): ReadonlyMap<string, GrpcMethodPlan> {
  const lib = protoLibrary();
  const root = loadRoot(grpc, lib);
  const seen = new Map<Protobuf.Type, MessagePlan>();
  const methods = new Map<string, GrpcMethodPlan>();
  const all: string[] = [];
  for (const service of servicesOf(root, lib)) {
    const serviceName = service.fullName.replace(/^\./, '');
    for (const method of service.methodsArray) {
      const path = `/${serviceName}/${method.name}`;
      all.push(path);
      if (!covers(path)) continue;
      method.resolve();
      const request = method.resolvedRequestType;
      const response = method.resolvedResponseType;
      if (!request || !response) throw new Error(`method ${path}: its message types are not defined in the files given`);
      methods.set(path, { path, request: messagePlan(request, lib, seen), response: messagePlan(response, lib, seen) });
    }
  }
  if (all.length === 0) throw new Error('the files given define no service');
  if (methods.size === 0) throw new Error(`match.path matches none of the ${all.length} method(s) the files define (e.g. ${all[0]})`);
  return methods;
}

function loadRoot(grpc: RouteGrpc, lib: typeof Protobuf): Protobuf.Root {
  let root: Protobuf.Root;
  try {
    if (grpc.descriptorSet !== undefined) {
      // fromDescriptor is added by protobufjs/ext/descriptor (protobuf-lib.ts loads it).
      root = (lib.Root as unknown as { fromDescriptor(bytes: Uint8Array): Protobuf.Root }).fromDescriptor(readFileSync(grpc.descriptorSet));
    } else {
      root = new lib.Root();
      const dirs = grpc.includeDirs ?? [];
      // Imports are looked up in the include directories, then beside the importing file.
      root.resolvePath = (origin: string, target: string): string => {
        if (isAbsolute(target)) return target;
        for (const dir of dirs) {
          const candidate = join(dir, target);
          if (existsSync(candidate)) return candidate;
        }
        return lib.util.path.resolve(origin, target);
      };
      root.loadSync([...(grpc.protoFiles ?? [])], { keepCase: true });
    }
    root.resolveAll();
  } catch (err) {
    throw new Error(describeLoadError(err, grpc), { cause: err });
  }
  return root;
}

/** protobufjs says `illegal token 'x' (file, line N)` or `no such type: X`; ENOENT names the path. */
function describeLoadError(err: unknown, grpc: RouteGrpc): string {
  const e = err as NodeJS.ErrnoException;
  if (e?.code === 'ENOENT' && typeof e.path === 'string') return `file not found: ${resolve(e.path)}`;
  const what = grpc.descriptorSet !== undefined ? `descriptor set ${grpc.descriptorSet}` : 'proto files';
  return `${what} could not be read: ${e instanceof Error ? e.message : String(err)}`;
}

function servicesOf(ns: Protobuf.NamespaceBase, lib: typeof Protobuf): Protobuf.Service[] {
  const out: Protobuf.Service[] = [];
  for (const nested of ns.nestedArray) {
    if (nested instanceof lib.Service) out.push(nested);
    if (nested instanceof lib.Namespace || nested instanceof lib.Type) out.push(...servicesOf(nested as Protobuf.NamespaceBase, lib));
  }
  return out;
}
