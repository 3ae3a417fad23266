/**
 * Images for the tests (docs/reference/eggs-and-installs.md), made with the real tools:
 *
 * - a Debian image built by the real `quetzal image:build` (busybox on
 *   bookworm's Essential set), CACHED between runs in a folder outside any
 *   test's DATA_DIR, keyed by (suite, packages, the mmdebstrap command line):
 *   the first run pays for the build (a minute or so, from Debian's mirrors),
 *   later runs only link it in (`cp -al`: images are never written in place);
 * - `docker save`-style and OCI archives the test makes itself: an OCI layout
 *   from `umoci init/new/unpack/repack` holding the host's dash, cat and
 *   sleep (with the libraries they load) and a marker file, turned into an
 *   archive by `skopeo copy`.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { mmdebstrapArgs } from '../../../../src/daemon/local/images/debian-build.js';
import { imageKey } from '../../../../src/daemon/local/images/image-store.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
const BIN = path.join(ROOT, 'bin/quetzal.js');

export const BUILT_IMAGE = 'quetzal-test/busybox:bookworm';
export const BUILT_SUITE = 'bookworm';
export const BUILT_PACKAGES = ['busybox'];

function cacheRoot(): string {
  return process.getuid?.() === 0 ? '/var/cache/quetzal-test-images' : path.join(os.tmpdir(), 'quetzal-test-images');
}

/** Where the cached build lives: a DATA_DIR whose images/ holds BUILT_IMAGE. */
export function builtImageCache(): string {
  const key = createHash('sha256')
    .update(JSON.stringify([BUILT_IMAGE, mmdebstrapArgs(BUILT_SUITE, BUILT_PACKAGES, 'TARGET')]))
    .digest('hex')
    .slice(0, 16);
  return path.join(cacheRoot(), key);
}

/**
 * The cached build's DATA_DIR, building it first when missing (through the
 * real binary). Concurrent callers may both build; the first rename wins.
 */
export function ensureBuiltImage(): string {
  const cached = builtImageCache();
  if (fs.existsSync(path.join(cached, 'images', imageKey(BUILT_IMAGE), 'image.json'))) return cached;
  fs.mkdirSync(path.dirname(cached), { recursive: true });
  const building = `${cached}.building-${process.pid}-${randomBytes(3).toString('hex')}`;
  fs.mkdirSync(building, { mode: 0o700 });
  const result = spawnSync(
    process.execPath,
    [BIN, 'image:build', '--name', BUILT_IMAGE, '--packages', BUILT_PACKAGES.join(' '), '--suite', BUILT_SUITE, '--json'],
    {
      cwd: building,
      env: { ...process.env, DATA_DIR: building, DATABASE_URL: `sqlite:${path.join(building, 'db.sqlite')}`, LOG_LEVEL: 'warn' },
      encoding: 'utf8',
      timeout: 600_000,
    },
  );
  if (result.status !== 0) {
    fs.rmSync(building, { recursive: true, force: true });
    throw new Error(`image:build for the test cache failed (${result.status}): ${result.stderr.slice(-2000)}`);
  }
  try {
    fs.renameSync(building, cached);
  } catch {
    fs.rmSync(building, { recursive: true, force: true }); // another worker's build won
  }
  return cached;
}

/** Links the cached built image into `dataDir/images` (hard links: no copy of its files). */
export function installBuiltImage(dataDir: string): string {
  const cached = ensureBuiltImage();
  const images = path.join(dataDir, 'images');
  fs.mkdirSync(images, { recursive: true, mode: 0o700 });
  execFileSync('cp', ['-al', path.join(cached, 'images', imageKey(BUILT_IMAGE)), images]);
  return BUILT_IMAGE;
}

/** Host programs (and the libraries they load) copied into the fixture image. */
const PROGRAMS = ['/bin/sh', '/bin/cat', '/bin/sleep', '/bin/ls'];

function librariesOf(program: string): string[] {
  const out = execFileSync('ldd', [program], { encoding: 'utf8' });
  return [...out.matchAll(/(\/[^\s]+)\s+\(0x/g)].map((m) => m[1]!);
}

function copyInto(rootfs: string, file: string): void {
  const target = path.join(rootfs, file);
  fs.mkdirSync(path.dirname(target), { recursive: true });
  fs.copyFileSync(fs.realpathSync(file), target);
  fs.chmodSync(target, 0o755);
}

/**
 * A tiny image archive: the host's sh, cat, sleep and ls with their libraries,
 * `/etc/quetzal-marker` holding `marker`, `/etc/os-release` naming it.
 * `kind` `docker` = a `docker save` archive, `oci` = a tar of an OCI layout.
 */
export function makeImageArchive(workDir: string, marker: string, kind: 'docker' | 'oci' = 'docker'): string {
  const layout = path.join(workDir, `layout-${marker}`);
  const bundle = path.join(workDir, `bundle-${marker}`);
  const umoci = (...args: string[]) => execFileSync('umoci', args, { stdio: 'pipe' });
  umoci('init', '--layout', layout);
  umoci('new', '--image', `${layout}:t`);
  umoci('unpack', '--image', `${layout}:t`, bundle);
  const rootfs = path.join(bundle, 'rootfs');
  for (const program of PROGRAMS) {
    copyInto(rootfs, program);
    for (const library of librariesOf(program)) copyInto(rootfs, library);
  }
  fs.mkdirSync(path.join(rootfs, 'etc'), { recursive: true });
  fs.writeFileSync(path.join(rootfs, 'etc/quetzal-marker'), `${marker}\n`);
  fs.writeFileSync(path.join(rootfs, 'etc/os-release'), `ID=quetzal-fixture\nVERSION_ID="${marker}"\n`);
  // What a careless image could hold: a secret only root may read, a setuid program.
  fs.writeFileSync(path.join(rootfs, 'etc/private-but-needed'), 'readable\n', { mode: 0o600 });
  fs.chmodSync(path.join(rootfs, 'bin/sleep'), 0o4755);
  umoci('repack', '--image', `${layout}:t`, bundle);
  const archive = path.join(workDir, `${marker}-${kind}.tar`);
  const target = kind === 'docker' ? `docker-archive:${archive}:quetzal/fixture:${marker}` : `oci-archive:${archive}:t`;
  execFileSync('skopeo', ['--insecure-policy', 'copy', '--quiet', `oci:${layout}:t`, target], { stdio: 'pipe' });
  fs.rmSync(layout, { recursive: true, force: true });
  fs.rmSync(bundle, { recursive: true, force: true });
  return archive;
}
