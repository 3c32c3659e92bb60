// What reading a proxied request one way costs per request (issue 8): the forward listener's target
// reader (split, canonical host, canonical path) and route selection, next to Node's own `URL`
// parse of the same targets (the baseline, same run). Bounded to a few seconds.

import { readPath } from '../src/proxy/reading/canonical-path.ts';
import { forwardTarget } from '../src/proxy/reading/request-target.ts';
import { compileRoutes, type RequestFacts } from '../src/proxy/reading/routes.ts';
import type { ProxyRoute } from '../src/config/types.ts';
import { timeLoop } from './timing.ts';

const BUDGET_MS = Number(process.env.BENCH_MS ?? 1000);

const TARGETS = [
  'http://api.partner.example/v1/customers/123?expand=cards',
  'http://api.partner.example:8443/v1/customers',
  'http://127.0.0.1:8080/v1/orders/77/lines',
  'http://api.partner.example/v1/%63ustomers/x/../123?x=1',
];
const PATHS = TARGETS.map((t) => t.slice(t.indexOf('/', 8)));

const route = (name: string, match: ProxyRoute['match']): ProxyRoute => ({ name, match, onError: 'reject', maxBodyBytes: 1 });
const table = compileRoutes([
  route('orders', { host: '127.0.0.1', port: 8080, path: '/v1/orders/**', methods: ['POST'] }),
  route('json', { host: 'api.partner.example', path: '/v1/customers/**', contentType: 'application/json' }),
  route('xml', { host: '*.partner.example', path: '/v2/**', contentType: 'application/xml' }),
]);
const facts: RequestFacts[] = TARGETS.map((t) => {
  const r = forwardTarget(t);
  if (!r.ok) throw new Error(`bench target refused: ${t}`);
  return { host: r.target.host, port: r.target.port, method: 'POST', path: r.target.path.split('?')[0], contentType: 'application/json' };
});

let sink = 0;
const per = (label: string, run: () => unknown): number => {
  const { perOpMs } = timeLoop(run, BUDGET_MS, 20_000);
  const ns = (perOpMs * 1e6) / TARGETS.length;
  console.log(`${label.padEnd(58)} ${ns.toFixed(0).padStart(6)} ns per request`);
  return ns;
};

const baseline = per('baseline: new URL(target) (Node, WHATWG)', () => {
  for (const t of TARGETS) sink += new URL(t).pathname.length;
});
const target = per('forwardTarget (split, canonical host and path)', () => {
  for (const t of TARGETS) sink += forwardTarget(t).ok ? 1 : 0;
});
per('readPath alone', () => {
  for (const p of PATHS) sink += readPath(p).ok ? 1 : 0;
});
const select = per('RouteTable.select (3 routes)', () => {
  for (const f of facts) sink += table.select(f) === undefined ? 0 : 1;
});
console.log(`reading + selection: ${(target + select).toFixed(0)} ns per request = ${((target + select) / baseline).toFixed(2)}× one URL parse`);
if (sink === -1) console.log('');
