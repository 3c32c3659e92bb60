// Finds a gateway already in a pod under names our injection status does not record: a copy of
// dpg-init/dpg-proxy renamed by hand, an injection by another injector (another release, another
// webhook), or a container running `dpg capture` / `dpg serve` itself. Injecting again would install
// capture twice and run two gateways: one would capture the other's upstream connections (each
// exempts only its own UID), so requests would be protected twice or loop. Refused instead.

type JsonObject = Record<string, unknown>;

/** Variables only the gateway's own containers carry (apps get HTTP_PROXY and CA paths, never these). */
const GATEWAY_VARIABLES = new Set(['DPG_TRANSPARENT_ADDR', 'DPG_PROXY_ADDR', 'DPG_ADMIN_ADDR', 'DPG_KEYRING', 'DPG_CONFIG']);
const GATEWAY_COMMANDS = new Set(['capture', 'serve']);

/** The image without its tag or digest: `registry:5000/dpg/gateway:1.2@sha256:…` → `registry:5000/dpg/gateway`. */
export function imageRepository(image: string): string {
  const noDigest = image.split('@', 1)[0];
  const slash = noDigest.lastIndexOf('/');
  const colon = noDigest.lastIndexOf(':');
  return colon > slash ? noDigest.slice(0, colon) : noDigest;
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/** Why `c` looks like a gateway (capture or proxy), or undefined. Names and image only, never values of env. */
export function gatewayLikeReason(c: JsonObject, ourImage: string): string | undefined {
  const image = typeof c.image === 'string' ? c.image : '';
  if (image !== '' && imageRepository(image) === imageRepository(ourImage)) return `it runs the gateway image ${imageRepository(image)}`;
  const words = [...strings(c.command), ...strings(c.args)].flatMap((w) => w.split(/\s+/)).filter((w) => w !== '');
  for (let i = 0; i + 1 < words.length; i++) {
    const base = words[i].slice(words[i].lastIndexOf('/') + 1);
    if ((base === 'dpg' || base === 'dpg.js') && GATEWAY_COMMANDS.has(words[i + 1])) return `it runs \`dpg ${words[i + 1]}\``;
  }
  const env = Array.isArray(c.env) ? c.env : [];
  const names = env.map((e) => (e !== null && typeof e === 'object' ? (e as JsonObject).name : undefined)).filter((n): n is string => typeof n === 'string');
  const found = names.filter((n) => GATEWAY_VARIABLES.has(n));
  if (found.length > 0) return `it sets ${found.join(', ')}`;
  return undefined;
}
