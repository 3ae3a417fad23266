#!/usr/bin/env node
// Bundles the TypeScript sources and the packages they use into
// dist/quetzal.mjs, which `bin/quetzal.js` runs whenever it is newer than every
// source it was built from and than package-lock.json (otherwise it runs the
// sources through tsx). Run by `npm install` (prepare) and `npm start`
// (prestart); takes well under a second. Why: the service idles at about
// 150 MiB loading the sources through tsx and the packages file by file, and
// at under 90 MiB from one bundle (docs/PERFORMANCE.md).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// --outdir: elsewhere than dist/ (the tests build into a folder of their own, inside the project so that packages resolve).
const outdirIndex = process.argv.indexOf('--outdir');
const dist = outdirIndex === -1 ? path.join(root, 'dist') : path.resolve(process.argv[outdirIndex + 1] ?? 'dist');
const tmp = path.join(dist, `.build-${process.pid}`);
fs.mkdirSync(tmp, { recursive: true });
try {
  const result = await build({
    absWorkingDir: root,
    entryPoints: ['src/cli/main.ts'],
    outfile: path.join(tmp, 'quetzal.mjs'),
    bundle: true,
    // Loaded from node_modules as they are: a native addon, a driver with an optional native
    // part, and a logger that finds its transports' files at run time.
    external: ['better-sqlite3', 'pg', 'pg-native', 'pino'],
    // Packages written as CommonJS call require(), which an ES module has only when given one.
    banner: { js: "import { createRequire as createRequireForBundle } from 'node:module';\nconst require = createRequireForBundle(import.meta.url);" },
    platform: 'node',
    format: 'esm',
    target: 'node20',
    metafile: true,
    logLevel: 'warning',
    legalComments: 'none',
  });
  // Our sources it was built from, for bin/quetzal.js to tell whether it is still current
  // (the packages' change with package-lock.json, which it checks too).
  const inputs = [...Object.keys(result.metafile.inputs).filter((input) => !input.startsWith('node_modules/')), 'package-lock.json'].sort();
  fs.writeFileSync(path.join(tmp, 'quetzal.inputs.json'), `${JSON.stringify(inputs)}\n`);
  // Inputs first, then the bundle: a reader never sees a new bundle with old inputs.
  fs.renameSync(path.join(tmp, 'quetzal.inputs.json'), path.join(dist, 'quetzal.inputs.json'));
  fs.renameSync(path.join(tmp, 'quetzal.mjs'), path.join(dist, 'quetzal.mjs'));
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
