// Starting a listener: resolves with the address it was given (port 0 picks a free one), or rejects
// with the listen error (EADDRINUSE, EACCES) instead of leaving it to the server's error event.

import type { AddressInfo, Server } from 'node:net';

export function listenOn(server: Server, host: string | undefined, port: number): Promise<{ host: string; port: number }> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const a = server.address() as AddressInfo;
      resolve({ host: a.address, port: a.port });
    });
  });
}
