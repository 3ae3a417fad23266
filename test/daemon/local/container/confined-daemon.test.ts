/**
 * The local daemon with containment on (docs/reference/containment.md, docs/reference/power-and-console.md#servers-outlive-the-service), below the HTTP API: the
 * supervisor's bookkeeping around runc containers and their monitors. What a
 * SIGKILL of the service leaves (a container without a pid file, a bundle
 * without a container, a pid file whose owner is dead) and what the next
 * start does with it (removes, removes, adopts); who owns a volume's files;
 * what an out-of-memory kill reports.
 * Needs root and runc (requireRunc): fails, saying so, without them.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createArchive } from '../../../../src/daemon/local/archive/create.js';
import { bundlePaths, writeBundle } from '../../../../src/daemon/local/container/bundle.js';
import { containerId, containerSpec, defaultCgroupsPath } from '../../../../src/daemon/local/container/container-spec.js';
import { resolveContainment, type ContainerRuntime } from '../../../../src/daemon/local/container/container-runtime.js';
import { findConmon, liveConmonPid, startMonitored } from '../../../../src/daemon/local/container/conmon.js';
import { startServerContainer } from '../../../../src/daemon/local/container/server-container.js';
import type { DaemonServer } from '../../../../src/daemon/daemon.js';
import { LocalDaemon } from '../../../../src/daemon/local/local-daemon.js';
import { OUT_OF_MEMORY_LINE } from '../../../../src/daemon/local/process/supervisor.js';
import { plainLog, requireRunc, SERVER_UID } from './helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function confinedDaemon(
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-confined-')),
  uidRange: { first: number; last: number } | null = null,
) {
  requireRunc();
  const runtime = await resolveContainment(
    { mode: 'on', uid: SERVER_UID, uidRange, dataDir, runDir: path.join(dataDir, 'run') },
    { warn: () => undefined },
  );
  if (runtime === null) throw new Error('containment was not resolved');
  const daemon = new LocalDaemon(dataDir, {
    stopGraceMs: 500,
    containers: runtime,
    ...(process.env.DEBUG_DAEMON ? { logger: { info: console.log, warn: console.log, error: console.log } } : {}),
  });
  await daemon.start();
  cleanups.push(async () => {
    await daemon.close();
    for (const container of await runtime.runc.list())
      await runtime.runc.delete(container.id, { force: true }).catch(() => undefined);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  return { daemon, runtime, dataDir };
}

function server(startup: string | null, limits?: DaemonServer['limits']): DaemonServer {
  return { uuid: randomUUID(), startup, stopCommand: null, ...(limits ? { limits } : {}) };
}

/** Whether the file holds a whole line: a shell's `>` creates it before the command writes. */
function written(file: string): boolean {
  return fs.existsSync(file) && fs.readFileSync(file, 'utf8').endsWith('\n');
}

async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** A container started the way the launcher does, but with no pid file: a service killed right after `runc start`. */
async function containerWithoutPidFile(
  runtime: ContainerRuntime,
  dataDir: string,
  serverUuid: string,
  startup = 'exec sleep 1000',
) {
  const volumeDir = path.join(dataDir, 'volumes', serverUuid);
  fs.mkdirSync(volumeDir, { recursive: true });
  fs.chownSync(volumeDir, SERVER_UID, SERVER_UID);
  const started = await startServerContainer(
    runtime.runc,
    path.join(dataDir, 'run'),
    {
      serverUuid,
      startup,
      volumeDir,
      uid: SERVER_UID,
      gid: SERVER_UID,
      limits: { memoryMiB: 0, cpuPercent: 0, pids: 64 },
      cgroupsPath: defaultCgroupsPath(serverUuid),
      hiddenPaths: [dataDir],
      host: runtime.host,
    },
    { conmon: findConmon()!, logPath: path.join(dataDir, 'logs', `${serverUuid}.log`), logSizeMax: 1024 * 1024 },
  );
  // The "crash": the service's handles go; the container and its conmon run on.
  started.stdin.destroy();
  started.exit.detach();
  return started;
}

/** The pid file a dead instance leaves for a container it ran. */
function deadOwnersPidFile(pidFile: string, pid: number, serverUuid: string, command: string): void {
  const startTime = readStat(pid)
    .slice(readStat(pid).lastIndexOf(')') + 2)
    .split(' ')[19];
  fs.writeFileSync(
    pidFile,
    `${JSON.stringify({
      pid,
      pgid: pid,
      startTime,
      command,
      startedAt: new Date(Date.now() - 60_000).toISOString(),
      owner: { pid: 2 ** 22 + 7, startTime: '1', bootId: null },
      token: 'dead',
      container: containerId(serverUuid),
    })}\n`,
  );
}

describe('the local daemon with containment on', () => {
  it('reports containment on, runs the startup command as SERVER_UID in its volume, and gives the volume to that uid', async () => {
    const { daemon } = await confinedDaemon();
    expect(daemon.containment).toBe('on');
    const target = server('id -u > uid.txt; pwd > cwd.txt; exec sleep 1000');
    await daemon.power(target, 'start');
    const volume = daemon.volumeDir(target.uuid);
    expect(fs.statSync(volume).uid).toBe(SERVER_UID);
    await eventually(() => written(path.join(volume, 'cwd.txt')), 5_000, 'the probe wrote its files');
    expect(fs.readFileSync(path.join(volume, 'uid.txt'), 'utf8').trim()).toBe(String(SERVER_UID));
    expect(fs.readFileSync(path.join(volume, 'cwd.txt'), 'utf8').trim()).toBe('/home/container');
    const pidFile = JSON.parse(fs.readFileSync(path.join(daemon.paths.run, `${target.uuid}.pid`), 'utf8')) as {
      container: string;
    };
    expect(pidFile.container).toBe(containerId(target.uuid));
    await daemon.power(target, 'kill');
    expect(await daemon.state(target)).toBe('offline');
    // Released: no container, no bundle.
    expect(fs.existsSync(bundlePaths(daemon.paths.run, target.uuid).dir)).toBe(false);
  });

  it('gives a volume from before containment to SERVER_UID whole, never following a link out of it', async () => {
    const { daemon, dataDir } = await confinedDaemon();
    const target = server('exec sleep 1000');
    const volume = daemon.volumeDir(target.uuid);
    fs.mkdirSync(path.join(volume, 'world/region'), { recursive: true });
    fs.writeFileSync(path.join(volume, 'world/region/r.0.0.mca'), 'chunk');
    const outside = path.join(dataDir, 'outside.txt');
    fs.writeFileSync(outside, 'the service');
    fs.symlinkSync(outside, path.join(volume, 'link-out'));
    fs.symlinkSync(dataDir, path.join(volume, 'world/dir-link-out'));
    await daemon.prepareVolume(target);
    for (const entry of ['', 'world', 'world/region', 'world/region/r.0.0.mca', 'link-out', 'world/dir-link-out']) {
      expect(fs.lstatSync(path.join(volume, entry)).uid, entry || 'the volume').toBe(SERVER_UID);
    }
    expect(fs.statSync(outside).uid).toBe(0);
    expect(fs.statSync(dataDir).uid).toBe(0);
  });

  it('gives restored files to SERVER_UID', async () => {
    const { daemon } = await confinedDaemon();
    const source = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-restore-src-'));
    cleanups.push(async () => fs.rmSync(source, { recursive: true, force: true }));
    fs.mkdirSync(path.join(source, 'plugins'));
    fs.writeFileSync(path.join(source, 'plugins/config.yml'), 'a: 1');
    const backupUuid = randomUUID();
    const archive = await createArchive({ volumeDir: source, archivePath: daemon.backupPath(backupUuid), ignore: [] });
    const target = server(null);
    await daemon.prepareVolume(target);
    await daemon.restoreBackup(target, { uuid: backupUuid, sha1: archive.sha1 }, { truncate: true });
    const volume = daemon.volumeDir(target.uuid);
    for (const entry of ['', 'plugins', 'plugins/config.yml'])
      expect(fs.lstatSync(path.join(volume, entry)).uid, entry || 'the volume').toBe(SERVER_UID);
  });

  it('at start, removes a container no pid file accounts for and a bundle with no container', async () => {
    const { daemon, runtime, dataDir } = await confinedDaemon();
    const orphan = randomUUID();
    const started = await containerWithoutPidFile(runtime, dataDir, orphan);
    const stray = randomUUID();
    const strayBundle = bundlePaths(daemon.paths.run, stray);
    await writeBundle(
      strayBundle,
      containerSpec({
        serverUuid: stray,
        startup: 'true',
        volumeDir: daemon.volumeDir(stray),
        uid: SERVER_UID,
        gid: SERVER_UID,
        limits: { memoryMiB: 0, cpuPercent: 0, pids: 0 },
        cgroupsPath: defaultCgroupsPath(stray),
        hiddenPaths: [],
        host: runtime.host,
      }),
      runtime.host,
    );
    expect((await runtime.runc.list()).map((c) => c.id)).toContain(containerId(orphan));

    // What the next service does first.
    await daemon.start();
    expect(await runtime.runc.state(containerId(orphan))).toBeNull();
    expect(fs.existsSync(bundlePaths(daemon.paths.run, orphan).dir)).toBe(false);
    expect(fs.existsSync(strayBundle.dir)).toBe(false);
    // Its process is gone with it.
    expect(fs.existsSync(`/proc/${started.pid}`) && !/^\S+ \S+ [ZX]/.test(readStat(started.pid))).toBe(false);
  });

  it("at start, removes a container created but never started (a SIGKILL between conmon's create and runc start), and its conmon goes", async () => {
    const { daemon, runtime, dataDir } = await confinedDaemon();
    const serverUuid = randomUUID();
    const volumeDir = path.join(dataDir, 'volumes', serverUuid);
    fs.mkdirSync(volumeDir, { recursive: true });
    fs.chownSync(volumeDir, SERVER_UID, SERVER_UID);
    const paths = bundlePaths(daemon.paths.run, serverUuid);
    await writeBundle(
      paths,
      containerSpec({
        serverUuid,
        startup: 'touch started.txt; exec sleep 1000',
        volumeDir,
        uid: SERVER_UID,
        gid: SERVER_UID,
        limits: { memoryMiB: 0, cpuPercent: 0, pids: 64 },
        cgroupsPath: defaultCgroupsPath(serverUuid),
        hiddenPaths: [dataDir],
        host: runtime.host,
      }),
      runtime.host,
    );
    const created = await startMonitored({
      conmon: runtime.conmon,
      runc: runtime.runc.binary,
      runcRoot: runtime.runc.stateRoot,
      id: containerId(serverUuid),
      bundleDir: paths.dir,
      files: {
        log: path.join(daemon.paths.logs, `${serverUuid}.log`),
        exitDir: paths.exitDir,
        conmonPidFile: paths.conmonPidFile,
        containerPidFile: paths.pidFile,
        runcLog: paths.runcLog,
      },
      logSizeMax: 1024 * 1024,
    });
    expect((await runtime.runc.state(containerId(serverUuid)))?.status).toBe('created');

    await daemon.start();
    expect(await runtime.runc.state(containerId(serverUuid))).toBeNull();
    expect(fs.existsSync(paths.dir)).toBe(false);
    // Gone, or a zombie its parent (the host's init) has yet to reap.
    await eventually(() => /^$|\) [ZX] /.test(readStat(created.conmonPid)), 5_000, 'its conmon to exit');
    // No code of the server ever ran.
    expect(fs.existsSync(path.join(volumeDir, 'started.txt'))).toBe(false);
  });

  it("adopts a dead instance's running container at start (docs/reference/power-and-console.md#servers-outlive-the-service): console, command, stats, state, kill; never two copies", async () => {
    const { daemon, runtime, dataDir } = await confinedDaemon();
    const startup = 'echo ready; while read line; do echo "got $line"; done';
    const target = { ...server(startup), stopCommand: null };
    const started = await containerWithoutPidFile(runtime, dataDir, target.uuid, startup);
    const pidFile = path.join(daemon.paths.run, `${target.uuid}.pid`);
    deadOwnersPidFile(pidFile, started.pid, target.uuid, startup);

    // What the next service does first.
    await daemon.start();
    expect(await daemon.state(target)).toBe('running');
    const record = JSON.parse(fs.readFileSync(pidFile, 'utf8')) as { pid: number; owner: { pid: number } };
    expect(record).toMatchObject({ pid: started.pid, owner: { pid: process.pid } });
    await daemon.sendCommand(target, 'after adoption');
    await eventually(
      () => plainLog(path.join(daemon.paths.logs, `${target.uuid}.log`)).includes('got after adoption'),
      5_000,
      'the adopted console',
    );
    expect(await daemon.consoleHistory(target, 10)).toEqual(['ready', 'got after adoption']);
    const resources = await daemon.resources(target);
    expect(resources.memoryBytes).toBeGreaterThan(0);
    expect(resources.uptimeMs).toBeGreaterThanOrEqual(60_000);
    // A start is a no-op: it runs already.
    await daemon.power(target, 'start');
    expect((await runtime.runc.list()).filter((c) => c.id === containerId(target.uuid))).toHaveLength(1);
    await daemon.power(target, 'kill');
    expect(await daemon.state(target)).toBe('offline');
    expect(fs.existsSync(pidFile)).toBe(false);
    expect(await runtime.runc.state(containerId(target.uuid))).toBeNull();
  });

  it("stops a dead instance's container whose monitor is gone (nobody holds its output): removed, pid file gone", async () => {
    const { daemon, runtime, dataDir } = await confinedDaemon();
    const target = server('exec sleep 1000');
    const started = await containerWithoutPidFile(runtime, dataDir, target.uuid);
    process.kill(Number(fs.readFileSync(started.paths.conmonPidFile, 'utf8')), 'SIGKILL');
    await eventually(() => liveConmonPid(started.paths.conmonPidFile) === null, 5_000, 'conmon to die');
    const pidFile = path.join(daemon.paths.run, `${target.uuid}.pid`);
    deadOwnersPidFile(pidFile, started.pid, target.uuid, 'exec sleep 1000');
    expect(await daemon.state(target)).toBe('running');

    await daemon.start();
    expect(await daemon.state(target)).toBe('offline');
    expect(fs.existsSync(pidFile)).toBe(false);
    expect(await runtime.runc.state(containerId(target.uuid))).toBeNull();
    expect(fs.existsSync(bundlePaths(daemon.paths.run, target.uuid).dir)).toBe(false);
    await daemon.power(target, 'start');
    expect(await daemon.state(target)).toBe('running');
    expect((await runtime.runc.list()).filter((c) => c.id === containerId(target.uuid))).toHaveLength(1);
    await daemon.power(target, 'kill');
  });

  it('reports an out-of-memory kill: offline, the console line, the listener', async () => {
    const { daemon } = await confinedDaemon();
    const killed: string[] = [];
    daemon.onOutOfMemory((uuid) => killed.push(uuid));
    const target = server(`exec node -e 'const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1))'`, {
      memoryMiB: 64,
      cpuPercent: 0,
      diskMiB: 0,
      pids: null,
    });
    await daemon.power(target, 'start');
    await eventually(async () => (await daemon.state(target)) === 'offline', 20_000, 'the server was killed');
    await eventually(() => killed.length > 0, 2_000, 'the listener was told');
    expect(killed).toEqual([target.uuid]);
    const log = plainLog(path.join(daemon.paths.logs, `${target.uuid}.log`));
    expect(log.trimEnd().split('\n').at(-1)).toBe(OUT_OF_MEMORY_LINE);
  });

  it('does not report a server that exits by itself as out of memory', async () => {
    const { daemon } = await confinedDaemon();
    const killed: string[] = [];
    daemon.onOutOfMemory((uuid) => killed.push(uuid));
    const target = server('echo bye', { memoryMiB: 64, cpuPercent: 0, diskMiB: 0, pids: null });
    await daemon.power(target, 'start');
    await eventually(async () => (await daemon.state(target)) === 'offline', 5_000, 'the server ended');
    expect(killed).toEqual([]);
    expect(plainLog(path.join(daemon.paths.logs, `${target.uuid}.log`))).toBe('bye\n');
  });
});

function readStat(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return '';
  }
}

describe('a uid of its own per server (SERVER_UID_RANGE)', () => {
  // Somewhere in the default range, apart for each run: uids are the machine's, shared with other tests.
  const first = 200_000 + Math.floor(Math.random() * 90_000);
  const range = { first, last: first + 9 };
  const withSlot = (uidSlot: number, startup: string | null): DaemonServer => ({ ...server(startup), uidSlot });

  it('runs servers with different slots under different uids and gives each its own volume and restored files', async () => {
    const { daemon } = await confinedDaemon(undefined, range);
    const one = withSlot(0, 'id -u > uid.txt; id -g > gid.txt; exec sleep 1000');
    const two = withSlot(3, 'id -u > uid.txt; id -g > gid.txt; exec sleep 1000');
    await daemon.power(one, 'start');
    await daemon.power(two, 'start');
    for (const [target, uid] of [
      [one, first],
      [two, first + 3],
    ] as const) {
      const volume = daemon.volumeDir(target.uuid);
      await eventually(() => written(path.join(volume, 'gid.txt')), 5_000, 'the probe wrote its uid');
      expect(fs.readFileSync(path.join(volume, 'uid.txt'), 'utf8').trim()).toBe(String(uid));
      expect(fs.readFileSync(path.join(volume, 'gid.txt'), 'utf8').trim()).toBe(String(uid));
      expect(fs.statSync(volume).uid).toBe(uid);
      expect(fs.statSync(path.join(volume, 'uid.txt')).uid).toBe(uid);
    }
    await daemon.power(one, 'kill');
    await daemon.power(two, 'kill');

    const source = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-restore-src-'));
    cleanups.push(async () => fs.rmSync(source, { recursive: true, force: true }));
    fs.writeFileSync(path.join(source, 'server.properties'), 'motd=hi');
    const backupUuid = randomUUID();
    const archive = await createArchive({ volumeDir: source, archivePath: daemon.backupPath(backupUuid), ignore: [] });
    await daemon.restoreBackup(two, { uuid: backupUuid, sha1: archive.sha1 }, { truncate: true });
    expect(fs.lstatSync(path.join(daemon.volumeDir(two.uuid), 'server.properties')).uid).toBe(first + 3);
  });

  it("gives a volume of the shared SERVER_UID to the server's own uid at start, root last, links never followed", async () => {
    const { daemon, dataDir } = await confinedDaemon(undefined, range);
    const target = withSlot(1, 'exec sleep 1000');
    const volume = daemon.volumeDir(target.uuid);
    fs.mkdirSync(path.join(volume, 'world'), { recursive: true });
    fs.writeFileSync(path.join(volume, 'world/level.dat'), 'level');
    const outside = path.join(dataDir, 'outside.txt');
    fs.writeFileSync(outside, 'the service');
    fs.symlinkSync(outside, path.join(volume, 'link-out'));
    for (const entry of ['', 'world', 'world/level.dat']) fs.chownSync(path.join(volume, entry), SERVER_UID, SERVER_UID);
    fs.lchownSync(path.join(volume, 'link-out'), SERVER_UID, SERVER_UID);
    await daemon.power(target, 'start');
    for (const entry of ['', 'world', 'world/level.dat', 'link-out'])
      expect(fs.lstatSync(path.join(volume, entry)).uid, entry || 'the volume').toBe(first + 1);
    expect(fs.statSync(outside).uid).toBe(0);
    await daemon.power(target, 'kill');
  });

  it('a server given without its slot (a partial row) keeps the uid its volume was given, never the shared SERVER_UID', async () => {
    const { daemon } = await confinedDaemon(undefined, range);
    const target = withSlot(4, 'id -u > uid.txt; exec sleep 1000');
    const volume = daemon.volumeDir(target.uuid);
    await daemon.power(target, 'start');
    // The first start gives the volume its uid; wait for the probe so the kill cannot land before it wrote.
    await eventually(() => written(path.join(volume, 'uid.txt')), 5_000, 'the first probe wrote its uid');
    await daemon.power(target, 'kill');
    const { uidSlot: _slot, ...partial } = target;
    fs.rmSync(path.join(volume, 'uid.txt'));
    await daemon.power(partial, 'start');
    await eventually(() => written(path.join(volume, 'uid.txt')), 5_000, 'the probe wrote its uid');
    expect(fs.readFileSync(path.join(volume, 'uid.txt'), 'utf8').trim()).toBe(String(first + 4));
    expect(fs.statSync(volume).uid).toBe(first + 4);
    await daemon.power(partial, 'kill');
  });

  it('refuses to start a server whose slot lies past the range, saying so', async () => {
    const { daemon } = await confinedDaemon(undefined, range);
    await expect(daemon.power(withSlot(10, 'exec sleep 1000'), 'start')).rejects.toThrow(/past SERVER_UID_RANGE/);
  });
});
