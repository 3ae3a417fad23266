/**
 * `image:build` (docs/reference/eggs-and-installs.md): a root file system from Debian's packages with
 * mmdebstrap, into a staging folder (image-store.ts makes it an image).
 *
 * - `--variant=essential`: Debian's Essential packages (a shell, coreutils,
 *   dpkg) plus `--include`d ones and what they depend on; no apt, nothing
 *   else. Images are read-only, so nothing installs into them later.
 * - Manual pages and documentation are left out (`path-exclude`, as Docker's
 *   slim images do), copyright files kept. The man1 folder is made before
 *   any package installs: openjdk's postinst registers its manual pages with
 *   update-alternatives, which fails without it.
 * - The suite's own mirror, with its `-updates` and security suites when the
 *   suite has them (stable releases), so an image gets Debian's fixes.
 */
import { ImageToolError, requireTool, runImageTool } from './image-tools.js';

export const DEFAULT_SUITE = 'bookworm';
const MIRROR = 'http://deb.debian.org/debian';
const SECURITY_MIRROR = 'http://deb.debian.org/debian-security';
/** Suites without -updates or -security suites. */
const ROLLING = new Set(['sid', 'unstable', 'experimental', 'rc-buggy']);

/** Debian package names (policy 5.6.1), optionally with `:arch`; nothing that could read as an option. */
const PACKAGE = /^[a-z0-9][a-z0-9+.-]+(?::[a-z0-9-]+)?$/;
const SUITE = /^[a-z][a-z0-9-]{1,30}$/;

export class ImageBuildInputError extends Error {}

/** The package list from `--packages "p1 p2"` (spaces or commas), checked; at least one. */
export function parsePackages(input: string | readonly string[]): string[] {
  const list = (typeof input === 'string' ? input.split(/[\s,]+/) : input).map((p) => p.trim()).filter(Boolean);
  if (list.length === 0) throw new ImageBuildInputError('name at least one package');
  for (const name of list) {
    if (!PACKAGE.test(name)) throw new ImageBuildInputError(`"${name}" is not a Debian package name`);
  }
  return [...new Set(list)];
}

export function checkSuite(suite: string): string {
  if (!SUITE.test(suite)) throw new ImageBuildInputError(`"${suite}" is not a Debian suite name (e.g. bookworm)`);
  return suite;
}

export function mmdebstrapArgs(suite: string, packages: readonly string[], target: string): string[] {
  const sources = [`deb ${MIRROR} ${suite} main`];
  if (!ROLLING.has(suite)) {
    sources.push(`deb ${MIRROR} ${suite}-updates main`, `deb ${SECURITY_MIRROR} ${suite}-security main`);
  }
  return [
    '--mode=root',
    '--variant=essential',
    '--format=directory',
    `--include=${packages.join(',')}`,
    '--dpkgopt=path-exclude=/usr/share/man/*',
    '--dpkgopt=path-exclude=/usr/share/doc/*',
    '--dpkgopt=path-include=/usr/share/doc/*/copyright',
    '--setup-hook=mkdir -p "$1/usr/share/man/man1"',
    suite,
    target,
    ...sources,
  ];
}

/** Runs mmdebstrap into `target` (which must not exist yet); `onLine` gets its output. */
export async function debootstrapRootfs(
  target: string,
  packages: readonly string[],
  suite: string,
  onLine?: (line: string) => void,
): Promise<void> {
  const mmdebstrap = requireTool('mmdebstrap');
  try {
    await runImageTool(mmdebstrap, mmdebstrapArgs(suite, packages, target), onLine, {
      env: {
        PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
        LC_ALL: 'C.UTF-8',
        DEBIAN_FRONTEND: 'noninteractive',
        TMPDIR: process.env.TMPDIR ?? '/tmp',
      },
    });
  } catch (err) {
    if (err instanceof ImageToolError) throw new ImageToolError('mmdebstrap', `building the image failed: ${err.message}`);
    throw err;
  }
}
