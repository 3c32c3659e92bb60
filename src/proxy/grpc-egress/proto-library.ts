// protobufjs, loaded apart (protobuf-lib.ts): `await loadProtoLibrary()` before routes with a `grpc`
// block are compiled (which happens synchronously, with the rest of a generation's routes).

import { createRequire } from 'node:module';
import type * as Protobuf from 'protobufjs';

export type ProtobufModule = typeof Protobuf;

let library: ProtobufModule | undefined;
let loading: Promise<void> | undefined;

/** Loads protobufjs once; every later call resolves at once. */
export function loadProtoLibrary(): Promise<void> {
  loading ??= import('./protobuf-lib.ts').then((m) => {
    library = m.default as unknown as ProtobufModule;
  });
  return loading;
}

/**
 * protobufjs, synchronously. Run from the sources (tests) it is required on the spot; in the build
 * it must have been loaded (loadProtoLibrary), else this throws.
 */
export function protoLibrary(): ProtobufModule {
  if (library) return library;
  if (import.meta.url.endsWith('.ts')) {
    const fromHere = createRequire(import.meta.url);
    const lib = fromHere('protobufjs') as ProtobufModule;
    fromHere('protobufjs/ext/descriptor');
    library = lib;
    return lib;
  }
  throw new Error('The protobuf library is not loaded yet (loadProtoLibrary)');
}
