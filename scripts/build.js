#!/usr/bin/env node
// Bundles the TypeScript sources and the packages they use into
// dist/quetzal.mjs, which `bin/quetzal.js` runs whenever it is newer than every
// source it was built from and than package-lock.json (otherwise it runs the
// sources through tsx). Run by `npm install` (prepare) and `npm start`
// (prestart); takes well under a second. Why: the service idles at about
// 150 MiB loading the sources through tsx and the packages file by file, and
// at under 90 MiB from one bundle (docs/PERFORMANCE.md).
//
// It also bundles the web console (web/src/main.tsx, docs/reference/web-console.md) into
// dist/console: content-hashed app.[hash].js and app.[hash].css, a chunk per
// page, and index.html referencing them, all minified. A failure of either
// build fails the script, and so `npm install`. `--console-only` builds only
// the console (the end-to-end tests).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// --outdir: elsewhere than dist/ (the tests build into a folder of their own, inside the project so that packages resolve).
const outdirIndex = process.argv.indexOf('--outdir');
const dist = outdirIndex === -1 ? path.join(root, 'dist') : path.resolve(process.argv[outdirIndex + 1] ?? 'dist');
const tmp = path.join(dist, `.build-${process.pid}`);
const consoleOnly = process.argv.includes('--console-only');
fs.mkdirSync(tmp, { recursive: true });
try {
  await buildConsole(path.join(tmp, 'console'), path.join(dist, 'console'));
  if (!consoleOnly) await buildService();
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}

async function buildService() {
  const result = await build({
    absWorkingDir: root,
    entryPoints: ['src/cli/main.ts'],
    outfile: path.join(tmp, 'quetzal.mjs'),
    bundle: true,
    // Loaded from node_modules as they are: a native addon, a driver with an optional native
    // part, a logger that finds its transports' files at run time, and ssh2 (SFTP), whose
    // optional native crypto and cpu-features addons a bundle cannot carry.
    external: ['better-sqlite3', 'pg', 'pg-native', 'pino', 'ssh2'],
    // Packages written as CommonJS call require(), which an ES module has only when given one.
    banner: {
      js: "import { createRequire as createRequireForBundle } from 'node:module';\nconst require = createRequireForBundle(import.meta.url);",
    },
    platform: 'node',
    format: 'esm',
    target: 'node20',
    metafile: true,
    logLevel: 'warning',
    legalComments: 'none',
  });
  // Our sources it was built from, for bin/quetzal.js to tell whether it is still current
  // (the packages' change with package-lock.json, which it checks too).
  const inputs = [
    ...Object.keys(result.metafile.inputs).filter((input) => !input.startsWith('node_modules/')),
    'package-lock.json',
  ].sort();
  fs.writeFileSync(path.join(tmp, 'quetzal.inputs.json'), `${JSON.stringify(inputs)}\n`);
  // Inputs first, then the bundle: a reader never sees a new bundle with old inputs.
  fs.renameSync(path.join(tmp, 'quetzal.inputs.json'), path.join(dist, 'quetzal.inputs.json'));
  fs.renameSync(path.join(tmp, 'quetzal.mjs'), path.join(dist, 'quetzal.mjs'));
}

/**
 * The web console, built into `staging` and then moved into `target` so that a
 * running service never sees a half-written build: the hashed files first
 * (a name is its content, so they never clash), then index.html by rename,
 * then the files no build references any more.
 */
async function buildConsole(staging, target) {
  const entry = 'web/src/main.tsx';
  const result = await build({
    absWorkingDir: root,
    entryPoints: { app: entry },
    outdir: staging,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome111', 'firefox115', 'safari16.4'],
    minify: true,
    entryNames: '[name].[hash]',
    chunkNames: 'chunk.[hash]',
    assetNames: 'asset.[hash]',
    tsconfig: 'web/tsconfig.json',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    // TanStack Query is written for React: preact/compat is React's API on Preact.
    alias: { react: 'preact/compat', 'react-dom': 'preact/compat', 'react/jsx-runtime': 'preact/jsx-runtime' },
    define: { 'process.env.NODE_ENV': '"production"' },
    metafile: true,
    logLevel: 'warning',
    legalComments: 'none',
  });
  const outputs = Object.entries(result.metafile.outputs);
  const main = outputs.find(([, output]) => output.entryPoint === entry);
  if (!main || !main[1].cssBundle) throw new Error(`web console build: no script or stylesheet for ${entry}`);
  const name = (file) => path.basename(file);
  // The chunks the entry imports statically, fetched at once rather than one import after another.
  const preload = new Set();
  const visit = (file) => {
    for (const { path: imported, kind } of result.metafile.outputs[file]?.imports ?? []) {
      if (kind === 'import-statement' && !preload.has(imported)) {
        preload.add(imported);
        visit(imported);
      }
    }
  };
  visit(main[0]);
  const template = fs.readFileSync(path.join(root, 'web/src/index.html'), 'utf8');
  const html = template
    .replace('<!-- stylesheet -->', `<link rel="stylesheet" href="/${name(main[1].cssBundle)}">`)
    .replace(
      '<!-- script -->',
      [
        ...[...preload].map((file) => `<link rel="modulepreload" href="/${name(file)}">`),
        `<script type="module" src="/${name(main[0])}"></script>`,
      ].join('\n    '),
    );
  if (html === template)
    throw new Error('web console build: web/src/index.html lacks its <!-- stylesheet --> and <!-- script --> places');
  fs.mkdirSync(target, { recursive: true });
  const files = new Set(outputs.map(([file]) => name(file)));
  for (const file of files) {
    if (!fs.existsSync(path.join(target, file))) fs.renameSync(path.join(staging, file), path.join(target, file));
  }
  const nextIndex = path.join(target, `.index-${process.pid}.html`);
  fs.writeFileSync(nextIndex, html);
  fs.renameSync(nextIndex, path.join(target, 'index.html'));
  for (const file of fs.readdirSync(target)) {
    if (file !== 'index.html' && !file.startsWith('.') && !files.has(file)) fs.rmSync(path.join(target, file), { force: true });
  }
}
