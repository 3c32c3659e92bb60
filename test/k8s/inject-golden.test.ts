// Golden files pin what injection does: each test/k8s/inject/NAME.yaml is injected and compared
// with NAME.injected.yaml. After an intended change, regenerate them and review the diff:
//   DPG_UPDATE_GOLDEN=1 node scripts/run-tests.mjs test/k8s/inject-golden
// Every output is also injected again (no change), taken out again (the input's pod templates come
// back), and validated against the Kubernetes OpenAPI schemas (unknown fields included).

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { injectStream } from '../../src/k8s/manual.ts';
import { uninject, type JsonObject } from '../../src/k8s/inject.ts';
import { templatePath, isList } from '../../src/k8s/workloads.ts';
import { flagsOf, testOptions } from './helpers/options.ts';
import { validateObjects, type K8sObject } from './helpers/schema.ts';

const DIR = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, 'inject');
const UPDATE = process.env.DPG_UPDATE_GOLDEN === '1';
const inputs = readdirSync(DIR).filter((f) => f.endsWith('.yaml') && !f.endsWith('.injected.yaml')).sort();

function objectsOf(text: string): JsonObject[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as unknown)
    .filter((v): v is JsonObject => typeof v === 'object' && v !== null)
    .flatMap((o) => (isList(o) ? (o.items as JsonObject[]) : [o]));
}

function templatesOf(object: JsonObject): JsonObject[] {
  const path = templatePath(object);
  if (!path) return [];
  let node: unknown = object;
  for (const k of path) node = (node as JsonObject)[k];
  return [node as JsonObject];
}

const toValidate: { label: string; object: K8sObject }[] = [];

describe('injection golden files', () => {
  for (const input of inputs) {
    it(input, () => {
      const text = readFileSync(join(DIR, input), 'utf8');
      const options = testOptions(flagsOf(text));
      const result = injectStream(text, options);
      assert.ok(result.output !== undefined, JSON.stringify(result.reports));
      const golden = join(DIR, input.replace(/\.yaml$/, '.injected.yaml'));
      if (UPDATE || !existsSync(golden)) {
        if (!UPDATE) assert.fail(`${golden} is missing: run with DPG_UPDATE_GOLDEN=1 and review it`);
        writeFileSync(golden, result.output);
      }
      assert.equal(result.output, readFileSync(golden, 'utf8'), `${input}: output differs from the golden file`);

      const again = injectStream(result.output, options);
      assert.equal(again.output, result.output, 'injecting an injected stream changes nothing');
      assert.ok(again.reports.every((r) => r.outcome !== 'injected'), 'nothing is injected twice');

      const before = objectsOf(text).flatMap(templatesOf);
      const after = objectsOf(result.output).flatMap(templatesOf);
      assert.equal(after.length, before.length);
      after.forEach((t, i) => assert.deepEqual(uninject(t), uninject(before[i]), 'taking the injection out gives the un-injected input back'));

      for (const [i, object] of objectsOf(result.output).entries()) {
        if (object.apiVersion === 'example.com/v1') continue; // a custom resource: no schema
        toValidate.push({ label: `${input}#${i + 1}`, object });
      }
    });
  }

  it('every injected object is valid against the Kubernetes OpenAPI schemas', async () => {
    // One pass for every output (the strict pass compiles them together); runs after the cases above.
    assert.ok(toValidate.length >= inputs.length);
    const problems = await validateObjects(toValidate);
    assert.deepEqual(problems, []);
  });
});
