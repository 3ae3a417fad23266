#!/usr/bin/env node
// The admin command line and the service (`quetzal serve`). It runs the bundle
// scripts/build.js makes (dist/quetzal.mjs) when that is newer than every source
// it was built from, and otherwise the TypeScript sources through tsx's loader,
// so an edit takes effect without a build step either way.
import { fileURLToPath } from 'node:url';
import { currentBundle } from './current-bundle.js';

const root = new URL('../', import.meta.url);

async function loadCli() {
  const bundle = currentBundle(root);
  if (bundle) return import(bundle.href);
  const { register } = await import('tsx/esm/api');
  // Loaded before tsx's hooks are in place: plain JavaScript needs no compiling, and
  // hundreds of files going through the hooks one by one would cost most of a second.
  await Promise.all([import('kysely'), import('pino'), import('pg')]);
  register({ tsconfig: fileURLToPath(new URL('tsconfig.json', root)) });
  return import('../src/cli/main.ts');
}

const { runCli } = await loadCli();
const code = await runCli(process.argv.slice(2));
process.exitCode = code;
// Everything is closed by now and the process ends by itself; this only guards
// against a stray handle keeping it alive.
setTimeout(() => process.exit(code), 3000).unref();
