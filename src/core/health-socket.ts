// Where the proxy answers GET /healthz and /readyz when its forward listener is off (DPG_PROXY_ADDR=off,
// `proxy.listen: off`: an injected pod in transparent mode, where a TCP forward proxy on loopback
// would be a way around capture). A Unix socket in the data directory: `dpg probe` in the gateway's
// own container reaches it, an app container (which does not mount that directory) cannot.

import { join } from 'node:path';

export function proxyHealthSocket(dataDir: string): string {
  return join(dataDir, 'proxy-health.sock');
}
