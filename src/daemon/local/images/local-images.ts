/**
 * The node's images (SPEC 16), kept under `DATA_DIR/images`. Placeholder:
 * only `host` exists until the image store lands (issue 20).
 */
import { DaemonError, type DaemonImages, type ImageInfo } from '../../daemon.js';

export const HOST_IMAGE = 'host';

const HOST: ImageInfo = Object.freeze({ name: HOST_IMAGE, sizeBytes: 0, source: 'host', createdAt: 0 });

export class LocalImages implements DaemonImages {
  constructor(readonly imagesDir: string) {}

  async list(): Promise<ImageInfo[]> {
    return [HOST];
  }

  async get(name: string): Promise<ImageInfo | null> {
    return name === HOST_IMAGE ? HOST : null;
  }

  async build(): Promise<ImageInfo> {
    throw new DaemonError('building images is not supported yet');
  }

  async import(): Promise<ImageInfo> {
    throw new DaemonError('importing images is not supported yet');
  }

  async remove(name: string): Promise<void> {
    throw new DaemonError(`no image named ${name}`);
  }

  /** The root filesystem folder a server on `name` runs on; null for `host` (the machine's own system folders). */
  async rootfsOf(name: string | null | undefined): Promise<string | null> {
    if (name === undefined || name === null || name === HOST_IMAGE) return null;
    throw new DaemonError(`no image named ${name}`);
  }
}
