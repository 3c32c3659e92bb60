import { injectStream } from './src/k8s/manual.ts';
import { injectorOptions } from './src/k8s/options.ts';
import { applyPatchToDocument } from './src/k8s/yaml-patch.ts';
const { options } = injectorOptions({ image: 'dpg:bench' }, '0.0.0-bench');
const text = `apiVersion: v1
kind: List
items:
  - apiVersion: apps/v1
    kind: Deployment
    metadata: { name: a }
    spec:
      template:
        spec:
          containers:
            - name: app
              image: x
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: [ALL] }, runAsUser: 10002 }
          volumes:
            - name: cfg
              configMap: { name: a, defaultMode: 0644 }
`;
const r = injectStream(text, options!);
console.log(r.output?.length); console.log(r.output);
