// Types of scripts/build.mjs for the TypeScript that imports it (bench/footprint.bench.ts).
export declare const EXTERNAL_PACKAGES: readonly string[];
export declare function buildDist(options?: { quiet?: boolean }): Promise<unknown>;
