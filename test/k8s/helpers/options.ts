// Injector options fixed for tests: golden files must not change when package.json's version does.
import { injectorOptions } from '../../../src/k8s/options.ts';
import type { InjectorOptions } from '../../../src/k8s/inject.ts';

export const TEST_VERSION = '0.0.0-test';
export const TEST_IMAGE = 'dpg:test';

export function testOptions(defaults: readonly string[] = []): InjectorOptions {
  const { options, problems } = injectorOptions({ image: TEST_IMAGE, defaults }, TEST_VERSION);
  if (!options) throw new Error(problems.join('; '));
  return options;
}

/** `# dpg-inject-flags: --default a=b --default c=d` on a golden input's first line. */
export function flagsOf(text: string): string[] {
  const m = /^# dpg-inject-flags:(.*)$/m.exec(text);
  if (!m) return [];
  const words = m[1].trim().split(/\s+/);
  const defaults: string[] = [];
  for (let i = 0; i < words.length; i++) if (words[i] === '--default') defaults.push(words[++i]);
  return defaults;
}
