// Module hooks that let Node 20 load the project's TypeScript: each .ts file is transpiled by esbuild
// (the transpiler tsx itself uses) when first imported. Why not tsx: it forces esbuild's keepNames,
// which wraps every closure in a defineProperty call — about a tenth of the CPU of a protect request
// in the HTTP profile (docs/performance.md). Type checking is `npm run typecheck`'s job, not this one's.
import { readFile } from 'node:fs/promises';
import { transform } from 'esbuild';

export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !/\.[mc]?ts$/.test(new URL(url).pathname)) return nextLoad(url, context);
  const source = await readFile(new URL(url), 'utf8');
  const { code } = await transform(source, {
    loader: 'ts',
    format: 'esm',
    target: 'node20',
    sourcemap: 'inline',
    sourcefile: new URL(url).pathname,
    tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true } },
  });
  return { format: 'module', source: code, shortCircuit: true };
}
