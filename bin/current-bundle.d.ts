/** scripts/build.js's bundle under `root` if it is current (bin/current-bundle.js), else undefined. */
export function currentBundle(root: URL): URL | undefined;
