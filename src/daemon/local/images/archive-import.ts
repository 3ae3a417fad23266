/**
 * `image:import` (docs/reference/eggs-and-installs.md): a `docker save` archive or an OCI archive (a tar
 * of an OCI image layout) unpacked into a staging folder's `rootfs`, with
 * Debian's skopeo and umoci:
 *
 *   skopeo copy docker-archive:A | oci-archive:A  oci:<staging>/layout:image
 *   umoci unpack --image <staging>/layout:image <staging>/bundle
 *
 * then `bundle/rootfs` becomes the staging's `rootfs` and the rest (the
 * layout's blobs, umoci's config.json and mtree) is deleted: an image keeps
 * its files once, not its layers too. umoci's config.json is never used (it
 * sets `terminal: true`, and the box's spec is ours: container-spec.ts); an
 * image's ENV, WORKDIR and ENTRYPOINT are not applied either: eggs give the
 * startup command and environment (docs/IMAGES.md).
 *
 * The kind is read from the archive's entries: `oci-layout` (with
 * `index.json`) is an OCI layout; `manifest.json` is `docker save`'s. Docker
 * 25 and later write both: read as OCI. Anything else is refused.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { list as listTar } from 'tar';
import { ImageToolError, requireTool, runImageTool } from './image-tools.js';

export type ArchiveKind = 'docker' | 'oci';

export class ImageArchiveError extends Error {}

export async function archiveKind(archivePath: string): Promise<ArchiveKind> {
  const stat = await fs.stat(archivePath).catch(() => null);
  if (stat === null) throw new ImageArchiveError(`no file at ${archivePath}`);
  if (!stat.isFile()) throw new ImageArchiveError(`${archivePath} is not a file`);
  const top = new Set<string>();
  try {
    await listTar({
      file: archivePath,
      onReadEntry: (entry) => {
        top.add(entry.path.replace(/^\.\//, ''));
      },
    });
  } catch (err) {
    throw new ImageArchiveError(`${archivePath} is not a tar archive: ${(err as Error).message}`);
  }
  if (top.has('oci-layout') && top.has('index.json')) return 'oci';
  if (top.has('manifest.json')) return 'docker';
  throw new ImageArchiveError(
    `${archivePath} is neither a docker save archive (manifest.json) nor an OCI archive (oci-layout, index.json)`,
  );
}

/** Unpacks the archive (of the `kind` archiveKind found) into `<stagingDir>/rootfs`; `onLine` gets the tools' output. */
export async function unpackArchive(
  archivePath: string,
  kind: ArchiveKind,
  stagingDir: string,
  onLine?: (line: string) => void,
): Promise<void> {
  const skopeo = requireTool('skopeo');
  const umoci = requireTool('umoci');
  // A link without ':' in its name: skopeo reads `transport:path[:reference]`, and the admin's path may hold colons.
  const source = path.join(stagingDir, 'archive.tar');
  await fs.symlink(path.resolve(archivePath), source);
  const layout = path.join(stagingDir, 'layout');
  const bundle = path.join(stagingDir, 'bundle');
  const env = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C.UTF-8', TMPDIR: stagingDir, HOME: stagingDir };
  try {
    await runImageTool(
      skopeo,
      ['--insecure-policy', 'copy', `${kind === 'oci' ? 'oci-archive' : 'docker-archive'}:${source}`, `oci:${layout}:image`],
      onLine,
      { env },
    );
    await runImageTool(umoci, ['unpack', '--image', `${layout}:image`, bundle], onLine, { env });
  } catch (err) {
    if (err instanceof ImageToolError) throw new ImageArchiveError(`importing ${archivePath} failed: ${err.message}`);
    throw err;
  }
  await fs.rename(path.join(bundle, 'rootfs'), path.join(stagingDir, 'rootfs'));
  await Promise.all([source, layout, bundle].map((p) => fs.rm(p, { recursive: true, force: true })));
}
