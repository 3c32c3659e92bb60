// A TCP port on 127.0.0.1 that was free a moment ago, for processes that must be told their port
// (a child `dpg serve` with DPG_*_ADDR) rather than take port 0 themselves.

import { createServer, type AddressInfo } from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}
