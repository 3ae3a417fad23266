#!/usr/bin/env node
// The admin command line and the service (`quetzal serve`). It runs the
// TypeScript sources directly through tsx's loader, so there is no build step.
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';
// Loaded before tsx's hooks are in place: plain JavaScript needs no compiling, and
// hundreds of files going through the hooks one by one would cost most of a second.
import 'kysely';
import 'pino';
import 'pg';

register({ tsconfig: fileURLToPath(new URL('../tsconfig.json', import.meta.url)) });

const { runCli } = await import('../src/cli/main.ts');
const code = await runCli(process.argv.slice(2));
process.exitCode = code;
// Everything is closed by now and the process ends by itself; this only guards
// against a stray handle keeping it alive.
setTimeout(() => process.exit(code), 3000).unref();
