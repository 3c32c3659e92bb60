// `dpg capture`: installs (or prints, or removes) the iptables rules that redirect this network
// namespace's outbound TCP to the transparent listener — what an init container runs. The work is
// in src/capture/; this module parses flags and reads the config (the one `dpg serve` reads, found the
// same way) for the routes' ports: every one of them must be captured.

import { ConfigError } from '../../core/errors.ts';
import { parseFlags, UsageError, type Command, type FlagSpec } from '../command.ts';

const options = {
  'proxy-uid': { type: 'string', value: 'UID', help: "the gateway's UID, exempt from capture (default 10001; never 0)" },
  'app-uid': { type: 'string', value: 'UID', help: "the app's UID: refused when it is the gateway's" },
  'redirect-port': { type: 'string', value: 'PORT', help: "the transparent listener's port (default: the config's, else 15006)" },
  'include-ports': { type: 'string', value: 'LIST|*', help: 'TCP ports to capture, comma-separated, or * for all (default: the ports routes name; * when a route names none; 80,443 without routes)' },
  'exclude-ports': { type: 'string', value: 'LIST', help: 'TCP ports never captured' },
  'exclude-cidrs': { type: 'string', value: 'LIST', help: 'destination CIDRs never captured (IPv4 and IPv6)' },
  'exclude-uids': { type: 'string', value: 'LIST', help: "UIDs whose connections are never captured: a service mesh's proxy (Istio 1337, Linkerd 2102), so the gateway's upstream connections can pass the mesh without coming back" },
  backend: { type: 'string', value: 'nft|legacy', help: 'iptables backend (default nft)' },
  config: { type: 'string', short: 'c', value: 'FILE', help: 'the gateway config dpg serve reads, for the routes\' ports (default DPG_CONFIG, else config/gateway.yaml)' },
  'dry-run': { type: 'boolean', help: 'print the rules and commands, change nothing' },
  remove: { type: 'boolean', help: 'remove every rule and chain capture installed' },
} satisfies FlagSpec;

const USAGE = `dpg capture [--proxy-uid 10001] [--app-uid UID] [--redirect-port 15006] [--include-ports 80,443|*]
            [--exclude-ports LIST] [--exclude-cidrs LIST] [--exclude-uids LIST] [--backend nft|legacy] [--config FILE]
            [--dry-run] [--remove]
    Redirects this network namespace's outbound TCP (IPv4 and IPv6) to the gateway's transparent
    listener with iptables, so apps are protected with no proxy setting. Run as root (NET_ADMIN),
    before the app starts (an init container). Re-running gives the same rules; --remove undoes it.`;

const DETAILS = `Rules (chain DPG_OUTPUT in the nat table; docs/transparent.md): connections of the gateway's
UID and of --exclude-uids return, loopback destinations (127.0.0.0/8, ::1) return, excluded CIDRs and ports return, the
included ports are redirected. UDP to the included ports is rejected (HTTP/3 falls back to TCP).
It reads the config dpg serve reads (--config, else DPG_CONFIG, else config/gateway.yaml), prints
each route's port and the ports it captures, and refuses (exit 1, no rule installed) when a route's
port would not be captured: left out of --include-ports, in --exclude-ports, or any port at all but
every one for a route that names none. After installing, a probe connection to this host's own address must arrive on the redirect port,
else the command fails. With the gateway down, redirected connections are refused: nothing goes
out uncaptured.`;

function ports(text: string, flag: string): number[] {
  const list = text.split(',').map((p) => p.trim()).filter((p) => p !== '');
  if (list.length === 0 || list.some((p) => !/^\d{1,5}$/.test(p))) throw new UsageError(`--${flag} must be a comma-separated list of ports`);
  return list.map(Number);
}

function uid(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d{1,10}$/.test(text.trim())) throw new UsageError(`--${flag} must be a numeric UID`);
  return Number(text);
}

export const captureCommand: Command = {
  name: 'capture',
  summary: "redirect this network namespace's outbound TCP to the transparent listener (iptables)",
  usage: USAGE,
  options,
  details: DETAILS,
  async run(args, io) {
    const { values: v } = parseFlags(args, options);
    if (v['dry-run'] && v.remove) throw new UsageError('--dry-run and --remove cannot be combined');
    const backend = (v.backend as string | undefined) ?? 'nft';
    if (backend !== 'nft' && backend !== 'legacy') throw new UsageError('--backend must be nft or legacy');

    // The config dpg serve reads (--config, else DPG_CONFIG, else config/gateway.yaml): its routes'
    // ports are what must be captured, and its transparent listener is where to redirect. Removal
    // needs neither, so a broken or missing config never keeps rules in place.
    let routes: readonly { name?: string; match?: { port?: number } }[] | undefined;
    let configPort: number | undefined;
    let configFile: string | undefined;
    if (!v.remove) {
      const { loadConfig, configFileOf } = await import('../../config/load.ts');
      configFile = configFileOf(v.config as string | undefined);
      const { config, problems } = loadConfig({ file: configFile });
      if (!config) {
        io.stderr.write(
          `dpg capture: it reads the config dpg serve reads (--config, else DPG_CONFIG, else config/gateway.yaml) to capture every port a route uses, and ${configFile} cannot be used; nothing was installed:\n`,
        );
        throw new ConfigError(problems);
      }
      routes = config.proxy.enabled ? (config.proxy.routes ?? []) : [];
      const listen = config.proxy.transparent?.listen.port;
      if (listen !== undefined && listen !== 0) configPort = listen;
    }
    const { routePorts, unportedRoutes, unportedWarning } = await import('../../capture/rules.ts');
    const include = v['include-ports'] as string | undefined;
    const includePorts = include === undefined ? routePorts(routes ?? []) : include.trim() === '*' ? '*' : ports(include, 'include-ports');
    const unported = unportedRoutes(routes ?? []);
    const portsFrom =
      include !== undefined ? '--include-ports' : unported.length > 0 ? 'a route names no port' : routes !== undefined && routes.length > 0 ? 'the ports routes name' : 'default: no route';
    // Routes without a port match every port: capturing them all is the default, said loudly.
    // (A narrower capture is refused by runCapture: uncapturedRoutes.)
    if (unported.length > 0 && !v.remove && include === undefined) io.stderr.write(`dpg capture: warning: ${unportedWarning(unported)}\n`);
    const redirect = v['redirect-port'] as string | undefined;
    if (redirect !== undefined && !/^\d{1,5}$/.test(redirect)) throw new UsageError('--redirect-port must be a port');

    const { runCapture } = await import('../../capture/capture.ts');
    try {
      await runCapture(
        {
          options: {
            proxyUid: uid(v['proxy-uid'] as string | undefined, 'proxy-uid') ?? 10001,
            appUid: uid(v['app-uid'] as string | undefined, 'app-uid'),
            excludeUids: v['exclude-uids'] ? (v['exclude-uids'] as string).split(',').map((u) => uid(u, 'exclude-uids') as number) : [],
            redirectPort: redirect !== undefined ? Number(redirect) : (configPort ?? 15006),
            includePorts,
            excludePorts: v['exclude-ports'] ? ports(v['exclude-ports'] as string, 'exclude-ports') : [],
            excludeCidrs: v['exclude-cidrs'] ? (v['exclude-cidrs'] as string).split(',').map((c) => c.trim()).filter((c) => c !== '') : [],
          },
          backend,
          mode: v['dry-run'] ? 'dry-run' : v.remove ? 'remove' : 'apply',
          portsFrom,
          routes: routes ?? [],
          configFile,
        },
        (line) => io.stdout.write(`${line}\n`),
      );
    } catch (err) {
      // Capture handles no payload or secret: the messages (ours and iptables') are what to act on.
      io.stderr.write(`dpg capture: ${err instanceof Error ? err.message : String(err)}\n`);
      return 1;
    }
    return 0;
  },
};
