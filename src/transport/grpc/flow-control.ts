// Widens the HTTP/2 receive windows of the server's connections. grpc-js leaves them at the
// 64 KiB protocol default, so a multi-megabyte ProtectValuesRequest crawls in on WINDOW_UPDATE
// round trips; a wider window roughly halves the transfer time of large batches on loopback.
//
// grpc-js has no public option for this on the server side (clients have
// `grpc-node.flow_control_window`), so this reaches into its list of http2 servers. It is guarded:
// when the internals differ it does nothing and reports false, and the server works as before.

import type { Server } from '@grpc/grpc-js';
import type { Http2Server, ServerHttp2Session } from 'node:http2';

/** HTTP/2's largest allowed window is 2^31 - 1; we stay far below it. */
const MAX_WINDOW = 16 * 1024 * 1024;

/**
 * Call after bindAsync has resolved. `windowBytes` is clamped to 64 KiB..16 MiB. Returns whether the
 * tuning could be applied.
 */
export function widenReceiveWindows(server: Server, windowBytes: number): boolean {
  const window = Math.max(65_535, Math.min(MAX_WINDOW, Math.floor(windowBytes)));
  const http2Servers: unknown = (server as unknown as { http2Servers?: unknown }).http2Servers;
  if (!(http2Servers instanceof Map)) return false;
  let applied = false;
  for (const candidate of http2Servers.keys()) {
    const http2Server = candidate as Http2Server;
    if (typeof http2Server?.on !== 'function') continue;
    http2Server.on('session', (session: ServerHttp2Session) => {
      try {
        session.setLocalWindowSize(window);
        session.settings({ initialWindowSize: window });
      } catch {
        // A session that is already closing cannot take new settings; it keeps the defaults.
      }
    });
    applied = true;
  }
  return applied;
}
