/** A LocalFiles over a real temporary folder of volumes, as the daemon builds it. */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { DaemonServer, ServerLimits } from '../../../../src/daemon/daemon.js';
import { LocalFiles } from '../../../../src/daemon/local/files/local-files.js';
import { measureDiskUsage } from '../../../../src/daemon/local/volume/disk-usage.js';

export interface FilesSandbox {
  root: string;
  volumes: string;
  backups: string;
  volume: string;
  outside: string;
  server: DaemonServer;
  files: LocalFiles;
  /** Measurements made (each one a walk of the volume). */
  measurements: number;
  cleanup(): void;
}

export function makeFilesSandbox(
  options: { limits?: Partial<ServerLimits>; owner?: { uid: number; gid: number } } = {},
): FilesSandbox {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-files-'));
  const volumes = path.join(root, 'volumes');
  const backups = path.join(root, 'backups');
  const outside = path.join(root, 'outside');
  const uuid = randomUUID();
  const volume = path.join(volumes, uuid);
  fs.mkdirSync(volume, { recursive: true });
  fs.mkdirSync(backups);
  fs.mkdirSync(outside);
  const limits = options.limits ? { memoryMiB: 0, cpuPercent: 0, diskMiB: 0, pids: null, ...options.limits } : undefined;
  const server: DaemonServer = { uuid, startup: null, stopCommand: null, ...(limits ? { limits } : {}) };
  const sandbox: FilesSandbox = {
    root,
    volumes,
    backups,
    volume,
    outside,
    server,
    measurements: 0,
    files: undefined as unknown as LocalFiles,
    cleanup: () => fs.rmSync(root, { recursive: true, force: true }),
  };
  sandbox.files = new LocalFiles({
    volumeDir: (id) => path.join(volumes, id),
    backupPath: (id) => path.join(backups, `${id}.tar.gz`),
    ownerOf: () => options.owner,
    volumeUsage: (s) => {
      sandbox.measurements++;
      return measureDiskUsage(path.join(volumes, s.uuid));
    },
  });
  return sandbox;
}

/** Writes a file of the volume (and its folders) directly, as a server's process would. */
export function put(volume: string, relative: string, content: string | Buffer = 'x'): string {
  const target = path.join(volume, relative);
  fs.mkdirSync(path.dirname(target), { recursive: true });
  fs.writeFileSync(target, content);
  return target;
}

/** Every path below `dir` (links not followed), sorted. */
export function tree(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true }) as string[]).sort();
}

/** Expects a promise to reject with a VolumeFileError of `kind`; returns it. */
export async function refusal(promise: Promise<unknown>): Promise<{ kind: string; message: string }> {
  try {
    await promise;
  } catch (err) {
    return { kind: (err as { kind?: string }).kind ?? `plain: ${(err as Error).message}`, message: (err as Error).message };
  }
  throw new Error('expected a refusal, but it succeeded');
}
