import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { KUBE_YAML } from './src/k8s/manifest-yaml.ts';
const text = readFileSync('/tmp/inject-list3000.yaml', 'utf8');
for (const [name, o] of [['1.2', {}], ['1.1 plain', { version: '1.1', merge: true }], ['kube', KUBE_YAML], ['1.2', {}], ['kube', KUBE_YAML]] as const) {
  const t = performance.now(); parseAllDocuments(text, o as any); console.log(name, Math.round(performance.now() - t));
}
