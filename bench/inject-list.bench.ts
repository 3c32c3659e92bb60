// Manual injection at scale (issue 16 class 14): `kubectl get deploy -o yaml | dpg inject -f -` on a
// List of N Deployments, in process (injectStream: parse, inject each item, patch, print), next to
// the least any tool does with the same input: the `yaml` package's parse + stringify of it. Also
// the webhook's decide() on one pod of 400 containers, next to JSON.parse + JSON.stringify of its
// AdmissionReview. RSS figures are the process's after each step; the whole `dpg inject` process's
// peak is measured with /usr/bin/time -v (docs/performance.md).
//   node --import ./scripts/ts-loader.mjs bench/inject-list.bench.ts     (ITEMS=3000 by default)

import { parseAllDocuments } from 'yaml';
import { injectStream } from '../src/k8s/manual.ts';
import { decide } from '../src/k8s/admission.ts';
import { injectorOptions } from '../src/k8s/options.ts';

const ITEMS = Number(process.env.ITEMS ?? 3000);
const CONTAINERS = Number(process.env.CONTAINERS ?? 400);

function deployment(i: number): string {
  return `  - apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: app-${i}
      namespace: shop
      labels: { app: app-${i} }
    spec:
      replicas: 2
      selector:
        matchLabels: { app: app-${i} }
      template:
        metadata:
          labels: { app: app-${i} }
          annotations: { prometheus.io/scrape: "true" }
        spec:
          securityContext: { runAsUser: 10002, runAsNonRoot: true }
          containers:
            - name: app
              image: registry.example/app-${i}:1.0
              ports: [{ containerPort: 8080 }]
              env:
                - { name: LOG_LEVEL, value: info }
                - { name: MODE, value: "0644" }
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: [ALL] } }
              volumeMounts: [{ name: cfg, mountPath: /etc/app }]
          volumes:
            - name: cfg
              configMap: { name: app-${i}, defaultMode: 0644 }
`;
}

const list = `apiVersion: v1\nkind: List\nmetadata:\n  resourceVersion: ""\nitems:\n${Array.from({ length: ITEMS }, (_, i) => deployment(i)).join('')}`;
const { options } = injectorOptions({ image: 'dpg:bench' }, '0.0.0-bench');
if (!options) throw new Error('injector options');

const rss = () => Math.round(process.memoryUsage().rss / 2 ** 20);
/** [result, wall ms]; also prints CPU ms (user + system): on a shared machine wall time mostly measures the others. */
let lastCpuMs = 0;
const time = <T>(f: () => T): [T, number] => {
  const t = process.hrtime.bigint();
  const c = process.cpuUsage();
  const r = f();
  const used = process.cpuUsage(c);
  lastCpuMs = (used.user + used.system) / 1000;
  return [r, Number(process.hrtime.bigint() - t) / 1e6];
};

console.log(`input: List of ${ITEMS} Deployments, ${(list.length / 2 ** 20).toFixed(1)} MiB of YAML`);
const [, baseMs] = time(() => parseAllDocuments(list).map((d) => (Array.isArray(d) ? '' : d.toString())).join(''));
console.log(`baseline yaml parse + stringify of the input: ${baseMs.toFixed(0)} ms wall, ${lastCpuMs.toFixed(0)} ms CPU (rss ${rss()} MiB)`);
const [result, injectMs] = time(() => injectStream(list, options));
if (!result.output) throw new Error(`inject failed: ${JSON.stringify(result.reports.slice(0, 3))}`);
const injected = result.reports.filter((r) => r.outcome === 'injected').length;
console.log(`dpg inject (injectStream): ${injectMs.toFixed(0)} ms wall, ${lastCpuMs.toFixed(0)} ms CPU, ${injected} items injected, ${(result.output.length / 2 ** 20).toFixed(1)} MiB out (rss ${rss()} MiB)`);
// The same library's cost for a document of the output's size: what any YAML round trip of it costs.
const output = result.output;
const [, outMs] = time(() => parseAllDocuments(output).map((d) => (Array.isArray(d) ? '' : d.toString())).join(''));
console.log(`baseline yaml parse + stringify of the output: ${outMs.toFixed(0)} ms wall, ${lastCpuMs.toFixed(0)} ms CPU (rss ${rss()} MiB)`);

const pod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'wide', namespace: 'shop' },
  spec: {
    securityContext: { runAsUser: 10002, runAsNonRoot: true },
    containers: Array.from({ length: CONTAINERS }, (_, i) => ({
      name: `c${i}`,
      image: 'registry.example/app:1.0',
      env: [{ name: 'LOG_LEVEL', value: 'info' }],
      securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
    })),
  },
};
const review = JSON.stringify({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: { uid: 'b', kind: { group: '', version: 'v1', kind: 'Pod' }, resource: { group: '', version: 'v1', resource: 'pods' }, operation: 'CREATE', namespace: 'shop', object: pod, userInfo: { username: 'bench' } },
});
const [, jsonMs] = time(() => JSON.stringify(JSON.parse(review)));
console.log(`baseline JSON.parse + stringify of a ${CONTAINERS}-container AdmissionReview: ${jsonMs.toFixed(1)} ms wall`);
const [answer, decideMs] = time(() => decide(JSON.parse(review), 'mutate', { injector: options, excludedNamespaces: new Set() }));
console.log(`webhook decide(): ${decideMs.toFixed(0)} ms wall, ${lastCpuMs.toFixed(0)} ms CPU, outcome ${answer.ok ? answer.outcome : answer.error} (rss ${rss()} MiB)`);
