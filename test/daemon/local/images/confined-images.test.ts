/**
 * Servers on images (docs/reference/eggs-and-installs.md), in real runc boxes through the local daemon:
 * a server on an image built by `image:build` sees the image's files and not
 * the host's, a read-only root, a writable /tmp and its own memory limit, and
 * the image's folder is left exactly as it was; an imported image (a
 * `docker save` archive, then an OCI archive of the same name) is swapped
 * under a running server, which keeps its version while the next start gets
 * the new one, and the old version goes once nothing uses it; starts on a
 * missing image, or unconfined on any image but host, are refused.
 * Needs root, runc and conmon (requireRunc), skopeo and umoci, and the
 * Debian mirror for the first (cached) build.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DaemonError, type DaemonServer } from '../../../../src/daemon/daemon.js';
import { resolveContainment, type ContainerRuntime } from '../../../../src/daemon/local/container/container-runtime.js';
import { imageKey } from '../../../../src/daemon/local/images/image-store.js';
import { LocalDaemon } from '../../../../src/daemon/local/local-daemon.js';
import { requireRunc, SERVER_UID } from '../container/helpers.js';
import { installBuiltImage, makeImageArchive } from './fixtures.js';

let dataDir: string;
let workDir: string;
let runtime: ContainerRuntime;
let daemon: LocalDaemon;
let builtImage: string;

beforeAll(async () => {
  requireRunc();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-images-'));
  workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-image-work-'));
  builtImage = installBuiltImage(dataDir);
  const resolved = await resolveContainment(
    { mode: 'on', uid: SERVER_UID, dataDir, runDir: path.join(dataDir, 'run') },
    { warn: () => undefined },
  );
  if (resolved === null) throw new Error('containment was not resolved');
  runtime = resolved;
  // No grace: a replaced version goes as soon as no bundle names it.
  daemon = new LocalDaemon(dataDir, { stopGraceMs: 500, containers: runtime, imageSweepGraceMs: 0 });
  await daemon.start();
}, 900_000);

afterAll(async () => {
  await daemon?.close();
  for (const container of (await runtime?.runc.list()) ?? [])
    await runtime.runc.delete(container.id, { force: true }).catch(() => undefined);
  for (const dir of [dataDir, workDir]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

function server(image: string | null, startup: string, limits?: DaemonServer['limits']): DaemonServer {
  return { uuid: randomUUID(), startup, stopCommand: null, image, ...(limits ? { limits } : {}) };
}

async function eventually(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

async function output(target: DaemonServer): Promise<string[]> {
  return daemon.consoleHistory(target, 200);
}

/** Starts the server and waits until it has ended; its console lines. */
async function runToEnd(target: DaemonServer): Promise<string[]> {
  await daemon.power(target, 'start');
  await eventually(async () => (await daemon.state(target)) === 'offline', 'the server ended');
  return output(target);
}

/** Every entry under `dir` with its kind, mode and times: what a write by runc would change. */
function snapshot(dir: string): string[] {
  const entries: string[] = [];
  const walk = (folder: string, depth: number) => {
    for (const name of fs.readdirSync(folder).sort()) {
      const full = path.join(folder, name);
      const stat = fs.lstatSync(full);
      entries.push(`${path.relative(dir, full)} ${stat.mode.toString(8)} ${stat.size} ${stat.mtimeMs} ${stat.ctimeMs}`);
      if (stat.isDirectory() && depth < 2) walk(full, depth + 1);
    }
  };
  walk(dir, 0);
  return entries;
}

describe('a server on an image built by image:build', () => {
  it("runs on the image's files alone, read-only, with /tmp and its cgroup, and leaves the image as it was", async () => {
    const rootfs = (await daemon.images.rootfsOf(builtImage))!;
    expect(fs.existsSync(path.join(rootfs, 'bin/busybox'))).toBe(true);
    const before = snapshot(rootfs);
    const probe = server(
      builtImage,
      [
        'busybox true && echo has-busybox',
        '[ -e /usr/sbin/runc ] && echo sees-host-runc || echo no-host-runc',
        'touch /probe 2>/dev/null && echo root-writable || echo root-readonly',
        'echo hi > /tmp/t && echo tmp-writable',
        'echo "memory=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max)"',
        '. /etc/os-release && echo "os=$ID-$VERSION_CODENAME"',
        'echo "pwd=$(pwd) uid=$(id -u)"',
      ].join('; '),
      { memoryMiB: 64, cpuPercent: 0, diskMiB: 0, pids: null },
    );
    const lines = await runToEnd(probe);
    expect(lines).toEqual([
      'has-busybox',
      'no-host-runc',
      'root-readonly',
      'tmp-writable',
      `memory=${64 * 2 ** 20}`,
      'os=debian-bookworm',
      `pwd=/home/container uid=${SERVER_UID}`,
    ]);
    // runc made every mount on folders the build made: nothing in the shared image was created or touched.
    expect(snapshot(rootfs)).toEqual(before);
  });
});

describe('an imported image', () => {
  it('is swapped under a running server: it keeps its version, the next start gets the new one, the old one goes after', async () => {
    const name = 'ghcr.io/quetzal-test/fixture:latest';
    const first = await daemon.images.import(name, makeImageArchive(workDir, 'one', 'docker'));
    expect(first).toMatchObject({ name, source: 'import' });
    expect(first.sizeBytes).toBeGreaterThan(100_000);
    const oldRoot = (await daemon.images.rootfsOf(name))!;
    // The image's files are readable by any uid and carry no setuid bit (rootfs-prepare.ts).
    expect(fs.statSync(path.join(oldRoot, 'etc/private-but-needed')).mode & 0o777).toBe(0o644);
    expect(fs.statSync(path.join(oldRoot, 'bin/sleep')).mode & 0o6000).toBe(0);

    // Prints the marker at its start and again for each console line.
    const startup = 'cat /etc/quetzal-marker /etc/private-but-needed; while read line; do cat /etc/quetzal-marker; done';
    const running = server(name, startup);
    await daemon.power(running, 'start');
    await eventually(async () => (await output(running)).includes('readable'), 'the first server printed its marker');
    expect(await output(running)).toEqual(['one', 'readable']);

    // The same name again, now from an OCI archive: a new version, switched in.
    await daemon.images.import(name, makeImageArchive(workDir, 'two', 'oci'));
    const newRoot = (await daemon.images.rootfsOf(name))!;
    expect(newRoot).not.toBe(oldRoot);
    // The running server's version stays (its bundle names it), and the server still reads it.
    expect(fs.existsSync(oldRoot)).toBe(true);
    await daemon.sendCommand(running, 'again');
    await eventually(async () => (await output(running)).length === 3, 'the first server answered');
    expect(await output(running)).toEqual(['one', 'readable', 'one']);

    const next = server(name, 'cat /etc/quetzal-marker');
    expect(await runToEnd(next)).toEqual(['two']);

    await daemon.power(running, 'kill');
    await eventually(async () => (await daemon.state(running)) === 'offline', 'the first server stopped');
    // Released: nothing names the old version any more, so the sweep removes it; the new one stays.
    await eventually(() => !fs.existsSync(path.dirname(oldRoot)), 'the old version was removed');
    expect(fs.existsSync(newRoot)).toBe(true);
    expect(fs.readdirSync(path.join(dataDir, 'images', imageKey(name))).sort()).toEqual([
      'image.json',
      path.basename(path.dirname(newRoot)),
    ]);
  });
});

describe('starts that cannot run', () => {
  it('refuses a server whose image does not exist, naming it, with nothing left running', async () => {
    const missing = server('ghcr.io/nobody/nothing:1', 'echo never');
    const start = daemon.power(missing, 'start');
    await expect(start).rejects.toBeInstanceOf(DaemonError);
    await expect(start).rejects.toThrow('ghcr.io/nobody/nothing:1');
    expect(await daemon.state(missing)).toBe('offline');
  });

  it('refuses a server on any image but host when servers run unconfined; host still starts', async () => {
    const unconfined = new LocalDaemon(dataDir);
    try {
      await expect(unconfined.power(server(builtImage, 'echo never'), 'start')).rejects.toThrow(/containment/);
      const onHost = server('host', 'echo on-host');
      await unconfined.power(onHost, 'start');
      await eventually(async () => (await unconfined.state(onHost)) === 'offline', 'the host server ended');
      expect(await unconfined.consoleHistory(onHost, 10)).toEqual(['on-host']);
    } finally {
      await unconfined.close();
    }
  });
});
