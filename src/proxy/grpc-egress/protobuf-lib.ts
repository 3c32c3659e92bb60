// protobufjs with its descriptor extension (Root.fromDescriptor), in a module of its own so the build
// puts it in a chunk of its own: loaded by `loadProtoLibrary()` only when a route names .proto files
// or a descriptor set, never by a sidecar start that routes no gRPC method.

import protobuf from 'protobufjs';
import 'protobufjs/ext/descriptor/index.js';

export default protobuf;
