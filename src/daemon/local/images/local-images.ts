/**
 * The node's images (docs/reference/eggs-and-installs.md, docs/IMAGES.md): read-only root file systems
 * under `DATA_DIR/images` that many servers share, named as eggs name Docker
 * images. `host` (the machine's own system folders bound in, as before
 * images existed) always exists and has no folder.
 *
 * Building or importing makes a new version in a staging folder and switches
 * the image to it atomically (image-store.ts); a running server keeps the
 * version its box was started on, the next start takes the new one. Old
 * versions are removed by `sweep` once no bundle names them (and a grace
 * period has passed since the switch): at the daemon's start, after each
 * build, import or removal, and when a box is released.
 *
 * Callable from any process sharing DATA_DIR (the service, the admin
 * commands): everything it knows is on disk.
 */
import { crashPoint } from '../../../crash-point.js';
import { DaemonError, type DaemonImages, type ImageInfo } from '../../daemon.js';
import { archiveKind, ImageArchiveError, unpackArchive } from './archive-import.js';
import { checkSuite, DEFAULT_SUITE, debootstrapRootfs, ImageBuildInputError, parsePackages } from './debian-build.js';
import { ImageToolError } from './image-tools.js';
import { imageKey, ImageStore, type ImageRecord, type Staging } from './image-store.js';
import { diskBytes, prepareRootfs } from './rootfs-prepare.js';

export const HOST_IMAGE = 'host';

const HOST: ImageInfo = Object.freeze({ name: HOST_IMAGE, sizeBytes: 0, source: 'host', createdAt: 0 });

/** Docker-style references (`ghcr.io/pterodactyl/yolks:java_17`, `debian@sha256:...`). */
const IMAGE_NAME = /^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$/;
const IMAGE_NAME_MAX = 255;
/** How long a replaced version outlives the switch even when no bundle names it (a start in flight elsewhere). */
const DEFAULT_SWEEP_GRACE_MS = 60_000;

export interface LocalImagesOptions {
  /** The root paths every box bundle on the node names (bundle.ts `bundleRootPaths`): versions in use. */
  readonly inUseRoots?: () => Promise<Iterable<string>>;
  readonly sweepGraceMs?: number;
}

export class LocalImages implements DaemonImages {
  private readonly store: ImageStore;
  private readonly inUseRoots: () => Promise<Iterable<string>>;
  private readonly sweepGraceMs: number;
  private sweeping: Promise<void> | null = null;

  constructor(
    readonly imagesDir: string,
    opts: LocalImagesOptions = {},
  ) {
    this.store = new ImageStore(imagesDir);
    this.inUseRoots = opts.inUseRoots ?? (async () => []);
    this.sweepGraceMs = opts.sweepGraceMs ?? DEFAULT_SWEEP_GRACE_MS;
  }

  async list(): Promise<ImageInfo[]> {
    const records = await this.store.list();
    records.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return [HOST, ...records.map(infoOf)];
  }

  async get(name: string): Promise<ImageInfo | null> {
    if (name === HOST_IMAGE) return HOST;
    if (!isImageName(name)) return null;
    const record = await this.store.read(imageKey(name));
    return record?.name === name ? infoOf(record) : null;
  }

  async build(
    name: string,
    options: { packages: readonly string[]; suite?: string },
    onLine?: (line: string) => void,
  ): Promise<ImageInfo> {
    checkNewName(name);
    let packages: string[];
    let suite: string;
    try {
      packages = parsePackages(options.packages);
      suite = checkSuite(options.suite ?? DEFAULT_SUITE);
    } catch (err) {
      if (err instanceof ImageBuildInputError) throw new DaemonError(err.message);
      throw err;
    }
    return this.make(name, 'build', (staging) => debootstrapRootfs(staging.rootfs, packages, suite, onLine), {
      packages,
      suite,
    });
  }

  async import(name: string, archivePath: string, onLine?: (line: string) => void): Promise<ImageInfo> {
    checkNewName(name);
    // Before anything is staged: a file that is no image archive leaves nothing behind.
    const kind = await archiveKind(archivePath).catch((err: unknown) => {
      throw err instanceof ImageArchiveError ? new DaemonError(err.message) : err;
    });
    return this.make(name, 'import', (staging) => unpackArchive(archivePath, kind, staging.dir, onLine), {});
  }

  /** Removes the image; versions a running box still uses stay until it is released (the sweep). */
  async remove(name: string): Promise<void> {
    if (name === HOST_IMAGE) throw new DaemonError('the image host is the machine itself; it cannot be removed');
    if ((await this.get(name)) === null) throw new DaemonError(`no image named ${name}`);
    await this.store.forget(imageKey(name));
    await this.sweep();
  }

  /**
   * The root file system a box on `name` runs on: the image's current
   * version's folder (a real, absolute path); null for `host` (the
   * machine's own system folders). One small file read: cheap enough for
   * every start. DaemonError when no image has that name.
   */
  async rootfsOf(name: string | null | undefined): Promise<string | null> {
    if (name === undefined || name === null || name === HOST_IMAGE) return null;
    const record = isImageName(name) ? await this.store.read(imageKey(name)) : null;
    if (record === null || record.name !== name) throw new DaemonError(`no image named ${name} on this node`);
    return this.store.currentRootfs(imageKey(name));
  }

  /**
   * Throws what a start on `image` would meet (DaemonError, 502): a non-host
   * image needs a box (`confined`), and the image must exist (docs/reference/eggs-and-installs.md).
   */
  async assertRunnable(image: string | null | undefined, confined: boolean): Promise<void> {
    if (image === undefined || image === null || image === HOST_IMAGE) return;
    if (!confined)
      throw new DaemonError(
        `This server runs on the image ${image}, which needs containment (CONTAINMENT=on); unconfined servers run on the host only.`,
      );
    if ((await this.get(image)) === null) throw new DaemonError(`This server's image ${image} does not exist on this node.`);
  }

  /**
   * Removes replaced versions no box uses, builds and imports a dead process
   * left half done, and deleted trees. One sweep at a time in this process;
   * another process's sweep at the same time only finds less to do.
   */
  sweep(): Promise<void> {
    this.sweeping ??= (async () => {
      try {
        const inUse = new Set<string>();
        for (const root of await this.inUseRoots()) {
          const version = await this.store.versionOf(root);
          if (version !== null) inUse.add(version);
        }
        await this.store.sweep(inUse, this.sweepGraceMs);
      } finally {
        this.sweeping = null;
      }
    })();
    return this.sweeping;
  }

  /** Stages a root file system with `fill`, prepares it, and switches the image to it. */
  private async make(
    name: string,
    source: ImageRecord['source'],
    fill: (staging: Staging) => Promise<void>,
    extra: Pick<ImageRecord, 'packages' | 'suite'>,
  ): Promise<ImageInfo> {
    const staging = await this.store.stage(name);
    let record: ImageRecord;
    try {
      await fill(staging);
      // A version holds its rootfs and nothing else (no tool's leftovers beside it).
      await this.store.keepOnlyRootfs(staging);
      await prepareRootfs(staging.rootfs);
      const sizeBytes = await diskBytes(staging.rootfs);
      // Test-only (QUETZAL_TEST_CRASH_AT=image-staged): dies with a whole staged tree that is not the image yet.
      crashPoint('image-staged');
      record = await this.store.commit(staging, { name, source, createdAt: Date.now(), sizeBytes, ...extra });
    } catch (err) {
      await this.store.discard(staging.dir).catch(() => undefined);
      if (err instanceof ImageToolError || err instanceof ImageArchiveError) throw new DaemonError(err.message);
      throw err;
    }
    await this.sweep().catch(() => undefined);
    return infoOf(record);
  }
}

function isImageName(name: string): boolean {
  return name.length <= IMAGE_NAME_MAX && IMAGE_NAME.test(name);
}

function checkNewName(name: string): void {
  if (name === HOST_IMAGE) throw new DaemonError('host is the machine itself; choose another image name');
  if (!isImageName(name))
    throw new DaemonError(
      `"${name}" is not an image name: up to ${IMAGE_NAME_MAX} of A-Z a-z 0-9 . _ : / @ + -, starting with a letter or digit`,
    );
}

function infoOf(record: ImageRecord): ImageInfo {
  return { name: record.name, sizeBytes: record.sizeBytes, source: record.source, createdAt: record.createdAt };
}
