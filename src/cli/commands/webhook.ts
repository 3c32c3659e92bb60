// `dpg webhook`: the mutating (and validating) admission webhook for sidecar injection, on its own
// HTTPS listener (not part of `dpg serve`); `dpg webhook certs` creates and renews its certificates.

import { integerFlag, parseFlags, UsageError, type CliIo, type Command, type FlagSpec } from '../command.ts';
import { injectorFlags, injectorFromFlags } from './inject.ts';

const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const SYSTEM_NAMESPACES = 'kube-system,kube-public,kube-node-lease';

function dnsName(flag: string, value: unknown): string {
  if (typeof value !== 'string' || !NAME.test(value)) throw new UsageError(`--${flag} must be a Kubernetes object name`);
  return value;
}

function parseListen(text: string): { host?: string; port: number } {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new UsageError('--listen must be HOST:PORT, [IPv6]:PORT or :PORT');
  const host = m[1] ?? m[2];
  return host ? { host, port } : { port };
}

// Flags with their help lines (the `value`/`help` fields are for generated per-command help).
const certsOptions = {
  out: { type: 'string', value: 'DIR', help: 'keep the certificates as files in DIR (ca.crt, ca.key, tls.crt, tls.key)' },
  kube: { type: 'boolean', help: 'keep them in-cluster: two Secrets and the webhook configurations\' caBundle' },
  service: { type: 'string', value: 'NAME', help: "the webhook's Service (default dpg-injector)" },
  namespace: { type: 'string', value: 'NS', help: 'its namespace (default POD_NAMESPACE, else dpg-system)' },
  'ca-secret': { type: 'string', value: 'NAME', help: 'Secret for the CA (default dpg-injector-ca)' },
  'tls-secret': { type: 'string', value: 'NAME', help: 'Secret for the serving certificate (default dpg-injector-tls)' },
  'mutating-webhook': { type: 'string', multiple: true, value: 'NAME', help: 'MutatingWebhookConfiguration to give the caBundle (default dpg-injector)' },
  'validating-webhook': { type: 'string', multiple: true, value: 'NAME', help: 'ValidatingWebhookConfiguration to give the caBundle' },
  'serving-days': { type: 'string', value: 'N', help: 'validity of a serving certificate (default 365)' },
  'renew-before-days': { type: 'string', value: 'N', help: 'renew this long before expiry (default 30)' },
} as const satisfies FlagSpec;

const serveOptions = {
  'tls-cert': { type: 'string', value: 'FILE', help: 'serving certificate (PEM), re-read when it changes' },
  'tls-key': { type: 'string', value: 'FILE', help: 'its private key (PEM)' },
  listen: { type: 'string', value: 'HOST:PORT', help: 'listen address (default :8443, every interface)' },
  'exclude-namespaces': { type: 'string', value: 'LIST', help: 'namespaces never injected, besides kube-system, kube-public, kube-node-lease' },
  ...injectorFlags,
  'tls-reload-seconds': { type: 'string', value: 'S', help: 'how often the TLS files are re-read (default 10)' },
} as const satisfies FlagSpec;

async function certs(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags(args, certsOptions);
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0].slice(0, 40))}`);
  const params = {
    service: dnsName('service', values.service ?? 'dpg-injector'),
    namespace: dnsName('namespace', values.namespace ?? process.env.POD_NAMESPACE ?? 'dpg-system'),
    servingDays: integerFlag(values['serving-days'], 'serving-days', { min: 1, max: 3650 }) ?? 365,
    renewBeforeDays: integerFlag(values['renew-before-days'], 'renew-before-days', { min: 1, max: 3650 }) ?? 30,
  };
  if (params.renewBeforeDays >= params.servingDays) throw new UsageError('--renew-before-days must be less than --serving-days');
  if (Boolean(values.out) === Boolean(values.kube)) throw new UsageError('give exactly one of --out DIR and --kube');
  const sync = await import('../../k8s/webhook-certs-sync.ts');
  let plan;
  let published: string[] = [];
  if (values.out) {
    plan = await sync.syncFiles(values.out as string, params);
  } else {
    const { KubeClient, inClusterConnection } = await import('../../k8s/kube-client.ts');
    const result = await sync.syncKube(
      new KubeClient(inClusterConnection()),
      {
        namespace: params.namespace,
        caSecret: dnsName('ca-secret', values['ca-secret'] ?? 'dpg-injector-ca'),
        tlsSecret: dnsName('tls-secret', values['tls-secret'] ?? 'dpg-injector-tls'),
        mutatingWebhooks: ((values['mutating-webhook'] as string[] | undefined) ?? ['dpg-injector']).map((n) => dnsName('mutating-webhook', n)),
        validatingWebhooks: ((values['validating-webhook'] as string[] | undefined) ?? []).map((n) => dnsName('validating-webhook', n)),
      },
      params,
    );
    plan = result;
    published = result.publishedTo;
  }
  const what = plan.renewedCa ? 'issued a new CA and serving certificate' : plan.renewedServing ? 'issued a new serving certificate' : 'certificates are current';
  io.stderr.write(`dpg webhook certs: ${what}${plan.reasons.length > 0 ? ` (${plan.reasons.join('; ')})` : ''}\n`);
  for (const p of published) io.stderr.write(`dpg webhook certs: caBundle published to ${p}\n`);
  return 0;
}

async function serve(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags(args, serveOptions);
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0].slice(0, 40))}`);
  const certFile = values['tls-cert'] as string | undefined;
  const keyFile = values['tls-key'] as string | undefined;
  if (!certFile || !keyFile) throw new UsageError('--tls-cert FILE and --tls-key FILE are required');
  const listen = parseListen((values.listen as string | undefined) ?? ':8443');
  const reload = values['tls-reload-seconds'] === undefined ? 10 : Number(values['tls-reload-seconds']);
  if (!(reload >= 0.05 && reload <= 3600)) throw new UsageError('--tls-reload-seconds must be between 0.05 and 3600');
  // The system namespaces are always excluded: a webhook outage must never stop them starting pods.
  const excluded = `${SYSTEM_NAMESPACES},${(values['exclude-namespaces'] as string | undefined) ?? ''}`.split(',').map((n) => n.trim()).filter(Boolean);

  const options = await injectorFromFlags(values);
  const { createLogger } = await import('../../core/logger.ts');
  const logger = createLogger({ level: process.env.DPG_LOG_LEVEL ?? 'info' });
  const { startWebhook } = await import('../../k8s/webhook-server.ts');
  const server = await startWebhook({
    ...listen,
    certFile,
    keyFile,
    tlsReloadMs: reload * 1000,
    injector: options,
    excludedNamespaces: new Set(excluded),
    logger,
  });
  io.stderr.write(`dpg webhook: listening on ${server.address.host}:${server.address.port}\n`);
  const stop = (signal: string) => {
    logger.info({ signal }, 'shutting down');
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  return new Promise<number>(() => undefined);
}

export const webhookCommand: Command = {
  name: 'webhook',
  summary: 'run the Kubernetes sidecar injection webhook, or manage its certificates',
  usage: `dpg webhook --tls-cert FILE --tls-key FILE [--listen HOST:PORT] [--exclude-namespaces LIST] [--image IMAGE] [--default dpg.io/NAME=VALUE]...
    HTTPS admission webhook: POST /mutate and /validate (AdmissionReview v1), GET /healthz, /readyz, /metrics.
    The TLS files are re-read when they change. Default listen :8443. kube-system, kube-public and
    kube-node-lease are always excluded; --exclude-namespaces adds more (e.g. the injector's own).
dpg webhook certs (--out DIR | --kube) [--service NAME] [--namespace NS] [--serving-days N] [--renew-before-days N]
    [--ca-secret NAME] [--tls-secret NAME] [--mutating-webhook NAME]... [--validating-webhook NAME]...
    Creates the webhook's CA and serving certificate, or renews them before they expire: as files in DIR
    (ca.crt, ca.key, tls.crt, tls.key), or in-cluster as Secrets plus the webhook configurations' caBundle.`,
  options: serveOptions,
  async run(args, io) {
    const [what, run] = args[0] === 'certs' ? ['dpg webhook certs', () => certs(args.slice(1), io)] : ['dpg webhook', () => serve(args, io)];
    try {
      return await run();
    } catch (err) {
      if (err instanceof UsageError) throw err;
      // Our own messages (files, the API's status and reason, listen errors): no key material in them.
      io.stderr.write(`${what}: ${(err as Error).message}\n`);
      return 1;
    }
  },
};
