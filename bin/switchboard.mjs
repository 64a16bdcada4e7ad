#!/usr/bin/env node
// The `switchboard` command (package.json "bin"): a thin HTTP client of the admin API, written in
// TypeScript and run through tsx, so it needs no build step. See src/cli/switchboard-cli.ts.
import { tsImport } from 'tsx/esm/api';

const { main } = await tsImport('../src/cli/switchboard-cli.ts', import.meta.url);
process.exitCode = await main(process.argv.slice(2));
