// Types of scripts/schema-build.mjs for the tests that import it.
/** Every generated file (path relative to the repository → text): the validators and docs/configuration.md. */
export function generatedFiles(): Map<string, string>;
export const ANNOTATIONS: readonly string[];
