#!/usr/bin/env node
// Entry point of the `dpg` command: registers the TypeScript loader (scripts/ts-hooks.mjs), then runs the CLI.
import { register } from 'node:module';

register('../scripts/ts-hooks.mjs', import.meta.url);
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
