// Proves the rules took: a connection from this process (a captured UID) to one of this host's own
// non-loopback addresses on an included port must arrive on the redirect port, with that address
// and port as its original destination. Nothing leaves the host: the address is local.

import { connect, createServer, type Server, type Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import { loadOriginalDestinationReader } from '../core/original-destination.ts';
import { effectivePorts, inCidrs, type CaptureOptions, type Family } from './rules.ts';

export type ProbeResult =
  | { readonly outcome: 'redirected'; readonly target: string; readonly note?: string }
  | { readonly outcome: 'skipped'; readonly reason: string }
  | { readonly outcome: 'failed'; readonly target: string; readonly reason: string };

/** A local non-loopback address of the family, outside the excluded CIDRs (link-local IPv6 needs a scope: skipped). */
export function probeAddress(family: Family, excludeCidrs: readonly string[]): string | undefined {
  for (const list of Object.values(networkInterfaces())) {
    for (const i of list ?? []) {
      if (i.internal || i.family !== (family === 4 ? 'IPv4' : 'IPv6')) continue;
      if (family === 6 && /^fe[89ab]/i.test(i.address)) continue;
      if (!inCidrs(i.address, excludeCidrs)) return i.address;
    }
  }
  return undefined;
}

export function probePort(o: CaptureOptions): number | undefined {
  if (o.includePorts !== '*') return effectivePorts(o)[0];
  for (const p of [443, 80, 8080, 1]) if (!o.excludePorts.includes(p) && p !== o.redirectPort) return p;
  return undefined;
}

export async function probe(o: CaptureOptions, family: Family, timeoutMs = 3000): Promise<ProbeResult> {
  const address = probeAddress(family, o.excludeCidrs);
  const port = probePort(o);
  if (address === undefined || port === undefined) return { outcome: 'skipped', reason: `no local non-loopback IPv${family} address outside the excluded CIDRs to probe` };
  const target = family === 6 ? `[${address}]:${port}` : `${address}:${port}`;
  if (process.getuid?.() === o.proxyUid) return { outcome: 'failed', target, reason: `the probe runs as UID ${o.proxyUid}, which the rules exempt: run dpg capture as another user (root)` };

  const listener = await listenOn(family === 4 ? '127.0.0.1' : '::1', o.redirectPort);
  if (listener === 'in-use') {
    // The gateway (or something) already holds the port: a connection accepted is the best we can see.
    const ok = await connects(address, port, timeoutMs);
    return ok
      ? { outcome: 'redirected', target, note: `port ${o.redirectPort} is already listening (the gateway?): the probe was accepted there` }
      : { outcome: 'failed', target, reason: `nothing accepted the probe connection; port ${o.redirectPort} is in use by a listener that did not answer it` };
  }
  const readOriginal = await loadOriginalDestinationReader();
  try {
    const arrived = new Promise<string | undefined>((resolve) => {
      listener.once('connection', (s: Socket) => {
        const dst = readOriginal(s);
        s.destroy();
        resolve(dst && (family === 6 ? `[${dst.address}]:${dst.port}` : `${dst.address}:${dst.port}`));
      });
    });
    const client = connect({ host: address, port });
    client.on('error', () => undefined);
    const timer = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), timeoutMs).unref());
    const got = await Promise.race([arrived, timer]);
    client.destroy();
    if (got === 'timeout') return { outcome: 'failed', target, reason: `the probe connection did not arrive on the redirect port ${o.redirectPort}` };
    const expected = family === 6 ? `[${new URL(`http://[${address}]/`).hostname.slice(1, -1)}]:${port}` : target;
    if (got !== expected) return { outcome: 'failed', target, reason: `the probe arrived with original destination ${got ?? 'none'}` };
    return { outcome: 'redirected', target };
  } finally {
    await new Promise<void>((r) => listener.close(() => r()));
  }
}

function listenOn(host: string, port: number): Promise<Server | 'in-use'> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve('in-use') : reject(err)));
    server.listen(port, host, () => resolve(server));
  });
}

function connects(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host, port, timeout: timeoutMs });
    const done = (ok: boolean): void => {
      s.destroy();
      resolve(ok);
    };
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
    s.once('timeout', () => done(false));
  });
}
