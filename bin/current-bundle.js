// Which bundle bin/quetzal.js may run: scripts/build.js's dist/quetzal.mjs, if
// it was built after the last change to every source it lists (our files and
// package-lock.json). Anything missing or unreadable means "none".
import fs from 'node:fs';

/** @param {URL} root the project folder, ending in '/' @returns {URL | undefined} */
export function currentBundle(root) {
  try {
    const bundle = new URL('dist/quetzal.mjs', root);
    const builtAt = fs.statSync(bundle).mtimeMs;
    const inputs = JSON.parse(fs.readFileSync(new URL('dist/quetzal.inputs.json', root), 'utf8'));
    if (!Array.isArray(inputs) || inputs.length === 0) return undefined;
    for (const input of inputs) if (fs.statSync(new URL(input, root)).mtimeMs > builtAt) return undefined;
    return bundle;
  } catch {
    return undefined;
  }
}
