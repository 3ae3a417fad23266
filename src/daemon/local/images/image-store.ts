/**
 * The images' folders under `DATA_DIR/images` (docs/reference/eggs-and-installs.md, docs/IMAGES.md):
 *
 *   images/<key>/image.json            the record: name, source, created_at, size_bytes, version, ...
 *   images/<key>/v-<ms>-<hex>/rootfs   one version of the image's root file system (read-only to servers)
 *   images/<key>/.staging-<pid>-<hex>/ a build or import under way (pid: the process making it)
 *   images/.trash-<hex>/               a version or staging folder being deleted
 *
 * `<key>` is the first 32 hex digits of sha256(name): names are Docker-style
 * strings (`ghcr.io/pterodactyl/yolks:java_17`), never path pieces. The
 * record's `version` is the image's current version: replacing image.json
 * (a new file renamed over it) is the one atomic switch from one version to
 * the next. A server resolves the version at its start and its container's
 * bundle names that folder, so a running server stays on its version while
 * the next start takes the new one.
 *
 * What a SIGKILL leaves, at any instant:
 *   - while staging: a `.staging-` folder whose process is dead: the sweep removes it;
 *   - after the staging folder became `v-...`, before image.json named it: a
 *     version no record names, which the sweep removes (after the grace, below);
 *   - while deleting: a `.trash-` folder, which the sweep removes.
 * image.json is never half-written (temporary file, then rename), so an image
 * is either its old version or its new one, never a half image.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { syncFileSystem } from '../restore/sync-filesystem.js';

export type ImageSource = 'build' | 'import';

export interface ImageRecord {
  readonly name: string;
  readonly source: ImageSource;
  /** Unix milliseconds of the current version. */
  readonly createdAt: number;
  readonly sizeBytes: number;
  /** The current version's folder name (`v-...`). */
  readonly version: string;
  /** For built images: what it was built from. */
  readonly packages?: readonly string[];
  readonly suite?: string;
}

export interface Staging {
  readonly key: string;
  readonly dir: string;
  readonly rootfs: string;
}

const RECORD = 'image.json';
const VERSION_PREFIX = 'v-';
const STAGING_PREFIX = '.staging-';
const TRASH_PREFIX = '.trash-';

export function imageKey(name: string): string {
  return createHash('sha256').update(name, 'utf8').digest('hex').slice(0, 32);
}

export class ImageStore {
  private realDir: string | undefined;

  constructor(readonly imagesDir: string) {}

  /** The images folder's real path (made on first use, 0700 like DATA_DIR): what bundles name. */
  async dir(): Promise<string> {
    if (this.realDir !== undefined) return this.realDir;
    await fs.mkdir(this.imagesDir, { recursive: true, mode: 0o700 });
    this.realDir = await fs.realpath(this.imagesDir);
    return this.realDir;
  }

  async read(key: string): Promise<ImageRecord | null> {
    let text: string;
    try {
      text = await fs.readFile(path.join(await this.dir(), key, RECORD), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    return parseRecord(text);
  }

  async list(): Promise<ImageRecord[]> {
    const records = await Promise.all((await this.keys()).map((key) => this.read(key)));
    return records.filter((record): record is ImageRecord => record !== null);
  }

  /** The current version's root file system, or null when no image has that key. */
  async currentRootfs(key: string): Promise<string | null> {
    const record = await this.read(key);
    return record === null ? null : path.join(await this.dir(), key, record.version, 'rootfs');
  }

  /** A fresh staging folder for `name`; its `rootfs` does not exist yet (the tools make it). */
  async stage(name: string): Promise<Staging> {
    const key = imageKey(name);
    const keyDir = path.join(await this.dir(), key);
    await fs.mkdir(keyDir, { recursive: true, mode: 0o700 });
    const dir = path.join(keyDir, `${STAGING_PREFIX}${process.pid}-${randomBytes(6).toString('hex')}`);
    await fs.mkdir(dir, { mode: 0o700 });
    return { key, dir, rootfs: path.join(dir, 'rootfs') };
  }

  /**
   * Makes the staged root file system the image's current version: flushed
   * to disk, renamed to a version folder, then image.json replaced. Returns
   * the new record.
   */
  async commit(staging: Staging, record: Omit<ImageRecord, 'version'>): Promise<ImageRecord> {
    await syncFileSystem(staging.dir);
    const version = `${VERSION_PREFIX}${Date.now()}-${randomBytes(6).toString('hex')}`;
    const keyDir = path.dirname(staging.dir);
    await fs.rename(staging.dir, path.join(keyDir, version));
    const full: ImageRecord = { ...record, version };
    const temporary = path.join(keyDir, `.${RECORD}.${randomBytes(4).toString('hex')}.tmp`);
    const handle = await fs.open(temporary, 'w', 0o600);
    try {
      await handle.writeFile(`${JSON.stringify(toJson(full), null, 2)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(temporary, path.join(keyDir, RECORD));
    return full;
  }

  /** Removes whatever a tool left in the staging folder beside its `rootfs`. */
  async keepOnlyRootfs(staging: Staging): Promise<void> {
    for (const entry of await fs.readdir(staging.dir)) {
      if (entry !== 'rootfs') await fs.rm(path.join(staging.dir, entry), { recursive: true, force: true });
    }
  }

  /** Forgets the image: its versions go at the next sweep that finds them unused. */
  async forget(key: string): Promise<void> {
    await fs.rm(path.join(await this.dir(), key, RECORD), { force: true });
  }

  /** Removes a folder: renamed out of the way first, so that a half-deleted tree is never found under its name. */
  async discard(folder: string): Promise<void> {
    const trash = path.join(await this.dir(), `${TRASH_PREFIX}${randomBytes(6).toString('hex')}`);
    try {
      await fs.rename(folder, trash);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    await fs.rm(trash, { recursive: true, force: true });
  }

  /**
   * Removes what no one needs: staging folders of dead processes, trash,
   * and versions that are not their image's current one and that no bundle
   * names (`inUse`: `<key>/<version>` pairs), once both the version and the
   * image's last switch are older than `graceMs` (a start in another process
   * may have read the old record and not written its bundle yet). A key
   * folder left empty without a record goes too.
   */
  async sweep(inUse: ReadonlySet<string>, graceMs: number, now = Date.now()): Promise<void> {
    const root = await this.dir();
    for (const entry of await readdirOrEmpty(root)) {
      if (entry.startsWith(TRASH_PREFIX)) {
        await fs.rm(path.join(root, entry), { recursive: true, force: true });
        continue;
      }
      if (!/^[0-9a-f]{32}$/.test(entry)) continue;
      await this.sweepKey(entry, inUse, graceMs, now);
    }
  }

  private async sweepKey(key: string, inUse: ReadonlySet<string>, graceMs: number, now: number): Promise<void> {
    const keyDir = path.join(await this.dir(), key);
    const record = await this.read(key).catch(() => null);
    const switchedAt = await fs
      .stat(path.join(keyDir, RECORD))
      .then((s) => s.mtimeMs)
      .catch(() => 0);
    let left = 0;
    for (const entry of await readdirOrEmpty(keyDir)) {
      const folder = path.join(keyDir, entry);
      if (entry.startsWith(STAGING_PREFIX)) {
        const pid = Number(/^\.staging-(\d+)-/.exec(entry)?.[1]);
        if (Number.isSafeInteger(pid) && pid !== process.pid && !isAlive(pid)) await this.discard(folder);
        else left++;
        continue;
      }
      if (!entry.startsWith(VERSION_PREFIX)) {
        if (entry !== RECORD) left++;
        continue;
      }
      const madeAt = Number(/^v-(\d+)-/.exec(entry)?.[1] ?? 0);
      const removable =
        entry !== record?.version && !inUse.has(`${key}/${entry}`) && now - Math.max(madeAt, switchedAt) >= graceMs;
      if (removable) await this.discard(folder);
      else left++;
    }
    if (record === null && left === 0) await fs.rmdir(keyDir).catch(() => undefined);
  }

  private async keys(): Promise<string[]> {
    return (await readdirOrEmpty(await this.dir())).filter((entry) => /^[0-9a-f]{32}$/.test(entry));
  }

  /** `<key>/<version>` of a root file system path inside this store, or null for any other path. */
  async versionOf(rootfs: string): Promise<string | null> {
    const relative = path.relative(await this.dir(), path.resolve(rootfs));
    const match = /^([0-9a-f]{32})\/(v-[0-9]+-[0-9a-f]+)\/rootfs$/.exec(relative.split(path.sep).join('/'));
    return match ? `${match[1]}/${match[2]}` : null;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await fs.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

function toJson(record: ImageRecord): Record<string, unknown> {
  return {
    name: record.name,
    source: record.source,
    created_at: record.createdAt,
    size_bytes: record.sizeBytes,
    version: record.version,
    ...(record.packages ? { packages: record.packages } : {}),
    ...(record.suite ? { suite: record.suite } : {}),
  };
}

function parseRecord(text: string): ImageRecord | null {
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return null;
  }
  const { name, source, created_at: createdAt, size_bytes: sizeBytes, version } = raw;
  if (typeof name !== 'string' || (source !== 'build' && source !== 'import')) return null;
  if (typeof createdAt !== 'number' || typeof sizeBytes !== 'number') return null;
  if (typeof version !== 'string' || !/^v-[0-9]+-[0-9a-f]+$/.test(version)) return null;
  return {
    name,
    source,
    createdAt,
    sizeBytes,
    version,
    ...(Array.isArray(raw.packages) ? { packages: raw.packages.filter((p): p is string => typeof p === 'string') } : {}),
    ...(typeof raw.suite === 'string' ? { suite: raw.suite } : {}),
  };
}
