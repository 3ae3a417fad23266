/**
 * The image store on disk (image-store.ts, local-images.ts) without the
 * tools: which folders a sweep removes and which it keeps (the current
 * version, a version a bundle names, anything inside the grace period, a
 * live process's staging), what a refused request leaves (nothing), and the
 * box spec on an image (container-spec.ts, bundle.ts).
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DaemonError } from '../../../../src/daemon/daemon.js';
import { bundlePaths, bundleRootPaths, writeBundle } from '../../../../src/daemon/local/container/bundle.js';
import { containerSpec, type HostLayout } from '../../../../src/daemon/local/container/container-spec.js';
import { imageKey, ImageStore } from '../../../../src/daemon/local/images/image-store.js';
import { HOST_IMAGE, LocalImages } from '../../../../src/daemon/local/images/local-images.js';
import { IMAGE_MOUNT_DIRS, prepareRootfs } from '../../../../src/daemon/local/images/rootfs-prepare.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-image-store-'));
  dirs.push(dir);
  return dir;
}

/** Commits a one-file root file system as a new version of `name`; its rootfs path. */
async function commitVersion(store: ImageStore, name: string, marker: string): Promise<string> {
  const staging = await store.stage(name);
  fs.mkdirSync(path.join(staging.rootfs, 'etc'), { recursive: true });
  fs.writeFileSync(path.join(staging.rootfs, 'etc/marker'), marker);
  const record = await store.commit(staging, { name, source: 'import', createdAt: Date.now(), sizeBytes: 4096 });
  return path.join(await store.dir(), imageKey(name), record.version, 'rootfs');
}

const HOUR = 3_600_000;

describe('the sweep', () => {
  it('keeps the current version and any version a bundle names; drops the others once the grace has passed', async () => {
    const store = new ImageStore(path.join(tempDir(), 'images'));
    const name = 'ghcr.io/pterodactyl/yolks:java_17';
    const v1 = await commitVersion(store, name, 'one');
    const v2 = await commitVersion(store, name, 'two');
    const v3 = await commitVersion(store, name, 'three');
    expect(await store.currentRootfs(imageKey(name))).toBe(v3);

    // Just switched: every version stays (a start elsewhere may have read the old record a moment ago).
    await store.sweep(new Set(), 60_000);
    expect([v1, v2, v3].map((v) => fs.existsSync(v))).toEqual([true, true, true]);

    // Later: v2 is named by a running box's bundle, v1 by nothing.
    const inUse = new Set([(await store.versionOf(v2))!]);
    await store.sweep(inUse, 60_000, Date.now() + HOUR);
    expect([v1, v2, v3].map((v) => fs.existsSync(v))).toEqual([false, true, true]);
    expect(fs.readFileSync(path.join(v3, 'etc/marker'), 'utf8')).toBe('three');

    // The box is gone: v2 goes too; the current version never does.
    await store.sweep(new Set(), 60_000, Date.now() + HOUR);
    expect([v2, v3].map((v) => fs.existsSync(v))).toEqual([false, true]);
  });

  it("removes a dead process's staging, a version no record names and trash; keeps a live process's staging", async () => {
    const store = new ImageStore(path.join(tempDir(), 'images'));
    const name = 'debian:bookworm';
    const current = await commitVersion(store, name, 'current');
    const keyDir = path.join(await store.dir(), imageKey(name));

    const dead = spawn('true');
    await new Promise((resolve) => dead.on('exit', resolve));
    const live = spawn('sleep', ['30']);
    try {
      fs.mkdirSync(path.join(keyDir, `.staging-${dead.pid}-aaaaaa/rootfs/usr`), { recursive: true });
      fs.mkdirSync(path.join(keyDir, `.staging-${live.pid}-bbbbbb/rootfs/usr`), { recursive: true });
      // A SIGKILL between the staging's rename and image.json: a version no record names.
      const orphan = path.join(keyDir, `v-${Date.now()}-cccccc`);
      fs.mkdirSync(path.join(orphan, 'rootfs'), { recursive: true });
      fs.mkdirSync(path.join(await store.dir(), '.trash-dddddd/rootfs/etc'), { recursive: true });

      await store.sweep(new Set(), 60_000);
      expect(fs.readdirSync(keyDir).sort()).toEqual(
        [path.basename(orphan), `.staging-${live.pid}-bbbbbb`, 'image.json', path.basename(path.dirname(current))].sort(),
      );
      expect(fs.existsSync(path.join(await store.dir(), '.trash-dddddd'))).toBe(false);

      await store.sweep(new Set(), 60_000, Date.now() + HOUR);
      expect(fs.existsSync(orphan)).toBe(false);
      expect(fs.existsSync(path.join(keyDir, `.staging-${live.pid}-bbbbbb`))).toBe(true);
      expect(fs.existsSync(current)).toBe(true);
    } finally {
      live.kill('SIGKILL');
    }
  });

  it('removes a forgotten image whole once no box uses it', async () => {
    const store = new ImageStore(path.join(tempDir(), 'images'));
    const name = 'old/image';
    const root = await commitVersion(store, name, 'x');
    await store.forget(imageKey(name));
    expect(await store.read(imageKey(name))).toBeNull();
    await store.sweep(new Set([(await store.versionOf(root))!]), 0);
    expect(fs.existsSync(root)).toBe(true);
    await store.sweep(new Set(), 0);
    expect(fs.existsSync(path.join(await store.dir(), imageKey(name)))).toBe(false);
  });
});

describe('LocalImages', () => {
  it('lists host first, resolves host to no folder, and refuses what it cannot do, leaving nothing behind', async () => {
    const dataDir = tempDir();
    const images = new LocalImages(path.join(dataDir, 'images'));
    expect(await images.list()).toEqual([{ name: HOST_IMAGE, sizeBytes: 0, source: 'host', createdAt: 0 }]);
    expect(await images.rootfsOf(null)).toBeNull();
    expect(await images.rootfsOf(HOST_IMAGE)).toBeNull();
    await expect(images.rootfsOf('ghcr.io/missing:1')).rejects.toThrow('no image named ghcr.io/missing:1');
    await expect(images.get('../../etc')).resolves.toBeNull();

    const refusals: [() => Promise<unknown>, RegExp][] = [
      [() => images.build('host', { packages: ['busybox'] }), /host is the machine itself/],
      [() => images.build('../escape', { packages: ['busybox'] }), /not an image name/],
      [() => images.build('ok/name', { packages: [] }), /at least one package/],
      [() => images.build('ok/name', { packages: ['--root=/'] }), /not a Debian package name/],
      [() => images.build('ok/name', { packages: ['busybox'], suite: 'bookworm;rm' }), /not a Debian suite/],
      [() => images.import('ok/name', path.join(dataDir, 'missing.tar')), /no file at/],
      [() => images.import('ok/name', '/etc/hostname'), /neither a docker save archive/],
      [() => images.remove(HOST_IMAGE), /cannot be removed/],
      [() => images.remove('ok/name'), /no image named ok\/name/],
    ];
    for (const [attempt, reason] of refusals) {
      const refused = attempt();
      await expect(refused).rejects.toBeInstanceOf(DaemonError);
      await expect(refused).rejects.toThrow(reason);
    }
    expect(fs.readdirSync(path.join(dataDir, 'images'))).toEqual([]);
  });

  it('says whether a start on an image can run: host always, others only confined and existing', async () => {
    const images = new LocalImages(path.join(tempDir(), 'images'));
    await images.assertRunnable(null, false);
    await images.assertRunnable(HOST_IMAGE, false);
    await expect(images.assertRunnable('debian:12', false)).rejects.toThrow(/needs containment/);
    await expect(images.assertRunnable('debian:12', true)).rejects.toThrow(/debian:12 does not exist/);
  });
});

describe('a root file system made fit to share', () => {
  it('gets real mount points, a resolv.conf file, no devices or setuid bits, everything readable', async () => {
    const rootfs = path.join(tempDir(), 'rootfs');
    fs.mkdirSync(path.join(rootfs, 'etc'), { recursive: true });
    fs.mkdirSync(path.join(rootfs, 'dev'));
    fs.mkdirSync(path.join(rootfs, 'var/tmp'), { recursive: true });
    fs.mkdirSync(path.join(rootfs, 'usr/bin'), { recursive: true });
    // What archives hold: /tmp and /home as links, resolv.conf a link out of the image, a device node, root's 0600 files.
    fs.symlinkSync('var/tmp', path.join(rootfs, 'tmp'));
    fs.symlinkSync('/host/home', path.join(rootfs, 'home'));
    fs.symlinkSync('../run/systemd/resolve/stub-resolv.conf', path.join(rootfs, 'etc/resolv.conf'));
    fs.writeFileSync(path.join(rootfs, 'etc/hosts'), '10.0.0.1 kept\n');
    execFileSync('mknod', [path.join(rootfs, 'dev/sda'), 'b', '8', '0']);
    execFileSync('mknod', [path.join(rootfs, 'usr/mem'), 'c', '1', '1']);
    fs.writeFileSync(path.join(rootfs, 'usr/bin/tool'), '#!/bin/sh\n', { mode: 0o700 });
    fs.chmodSync(path.join(rootfs, 'usr/bin/tool'), 0o6700);
    fs.writeFileSync(path.join(rootfs, 'etc/secret'), 'x', { mode: 0o600 });
    fs.chmodSync(rootfs, 0o700);

    await prepareRootfs(rootfs);

    for (const dir of IMAGE_MOUNT_DIRS) expect(fs.lstatSync(path.join(rootfs, dir)).isDirectory()).toBe(true);
    expect(fs.lstatSync(path.join(rootfs, 'home')).isDirectory()).toBe(true);
    expect(fs.statSync(path.join(rootfs, 'tmp')).mode & 0o7777).toBe(0o1777);
    expect(fs.readdirSync(path.join(rootfs, 'dev'))).toEqual([]);
    expect(fs.existsSync(path.join(rootfs, 'usr/mem'))).toBe(false);
    const resolv = fs.lstatSync(path.join(rootfs, 'etc/resolv.conf'));
    expect([resolv.isFile(), resolv.size]).toEqual([true, 0]);
    expect(fs.readFileSync(path.join(rootfs, 'etc/hosts'), 'utf8')).toBe('10.0.0.1 kept\n');
    expect(fs.statSync(path.join(rootfs, 'usr/bin/tool')).mode & 0o7777).toBe(0o755);
    expect(fs.statSync(path.join(rootfs, 'etc/secret')).mode & 0o777).toBe(0o644);
    expect(fs.statSync(rootfs).mode & 0o777).toBe(0o755);
  });
});

const HOST: HostLayout = {
  systemDirs: [
    { path: '/usr', kind: 'dir' },
    { path: '/bin', kind: 'symlink', target: 'usr/bin' },
    { path: '/etc', kind: 'dir' },
  ],
  extraFiles: [],
  swapLimit: true,
  nofileHardLimit: 65536,
};

describe('the box on an image', () => {
  const base = {
    serverUuid: 'abc',
    startup: 'echo hi',
    volumeDir: '/data/volumes/abc',
    uid: 1000,
    gid: 1000,
    limits: { memoryMiB: 0, cpuPercent: 0, pids: 0 },
    cgroupsPath: '/quetzal/quetzal-abc',
    hiddenPaths: ['/etc/quetzal'],
    host: HOST,
    resolvConf: '/data/run/network/resolv.conf',
  };

  it("has the image's rootfs as its read-only root and nothing of the host's system bound in", () => {
    const spec = containerSpec({ ...base, imageRootfs: '/data/images/k/v-1-a/rootfs' }) as {
      root: unknown;
      mounts: { destination: string; source: string }[];
      linux: { maskedPaths: string[] };
    };
    expect(spec.root).toEqual({ path: '/data/images/k/v-1-a/rootfs', readonly: true });
    const destinations = spec.mounts.map((m) => m.destination);
    expect(destinations).toEqual([
      '/proc',
      '/dev',
      '/dev/pts',
      '/dev/shm',
      '/dev/mqueue',
      '/sys',
      '/sys/fs/cgroup',
      '/tmp',
      '/etc/resolv.conf',
      '/home/container',
    ]);
    expect(spec.linux.maskedPaths).not.toContain('/etc/quetzal');
    // On host the system folders are bound and the hidden path masked, as before.
    const onHost = containerSpec(base) as typeof spec;
    expect(onHost.root).toEqual({ path: 'rootfs', readonly: true });
    expect(onHost.mounts.map((m) => m.destination)).toEqual(expect.arrayContaining(['/usr', '/etc']));
    expect(onHost.linux.maskedPaths).toContain('/etc/quetzal');
    expect(() => containerSpec({ ...base, imageRootfs: 'relative/rootfs' })).toThrow(/absolute/);
  });

  it('writes no host links into the bundle on an image, and the bundle names its root for the sweep', async () => {
    const runDir = tempDir();
    const onImage = bundlePaths(runDir, 'on-image');
    await writeBundle(onImage, containerSpec({ ...base, serverUuid: 'on-image', imageRootfs: '/images/k/v-1-a/rootfs' }), HOST);
    expect(fs.readdirSync(onImage.rootfs)).toEqual([]);
    const onHost = bundlePaths(runDir, 'on-host');
    await writeBundle(onHost, containerSpec({ ...base, serverUuid: 'on-host' }), HOST);
    expect(fs.readdirSync(onHost.rootfs)).toEqual(['bin']);
    // Another kind of bundle (an installer box's) laid out the same way counts too.
    fs.mkdirSync(path.join(runDir, 'installs', 'x'), { recursive: true });
    fs.writeFileSync(
      path.join(runDir, 'installs', 'x', 'config.json'),
      JSON.stringify({ root: { path: '/images/k/v-2-b/rootfs' } }),
    );
    expect((await bundleRootPaths(runDir)).sort()).toEqual(
      ['/images/k/v-1-a/rootfs', '/images/k/v-2-b/rootfs', onHost.rootfs].sort(),
    );
  });
});
