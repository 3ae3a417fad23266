/**
 * Issue 18, part 3, as a hostile tenant tries it: from inside a real
 * confined server (its startup script and programs in its volume) against a
 * real service with CONTAINMENT=on. Each attack here worked on the code
 * before issue 18: the seccomp probe's refused calls (`unshare -Ur`,
 * `pidfd_getfd` on the first process, ptrace, mount, keyctl, bpf...), another
 * server's inotify exhaustion (all servers shared uid 988), another server's
 * files through /proc/<pid>/root (same uid), 200 MB written past a 50 MB
 * limit while running, and 450 MB-style hogs of folders, links and empty
 * files that the limit never counted. Needs root, runc and a C compiler.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DISK_LIMIT_LINE } from '../../src/daemon/local/resources/disk-watch.js';
import { EXPECTED_PROBE_RESULTS, probeResults, syscallProbeBinary } from '../fixtures/syscall-probe.js';
import {
  api,
  createServer,
  power,
  readLog,
  resources,
  runcList,
  SERVER_UID,
  sleep,
  useService,
  waitFor,
  waitState,
  type ServiceHandle,
  type TestServer,
} from './confined-service.js';

const service = useService();
const MiB = 1024 * 1024;

/** Writes an executable into the server's volume (given to the server's uid at its start). */
function install(server: TestServer, name: string, content: string | Buffer): void {
  fs.writeFileSync(path.join(server.volumeDir, name), content, { mode: 0o755 });
}

/** The activity entries of `event` (by the system) on the server, waited for up to 5 s. */
async function systemEvents(
  handle: ServiceHandle,
  server: TestServer,
  event: string,
): Promise<{ event: string; actor: string }[]> {
  let entries: { attributes: { event: string }; relationships: { actor: { object: string } } }[] = [];
  await waitFor(
    async () => {
      const res = await api(handle, 'GET', `/api/client/servers/${server.identifier}/activity?filter[event]=${event}`);
      entries = (res.body as { data: typeof entries }).data;
      return entries.length > 0;
    },
    `a ${event} activity entry`,
    5_000,
  );
  return entries.map((entry) => ({ event: entry.attributes.event, actor: entry.relationships.actor.object }));
}

/** Waits until the server is offline, at most `ms` after `since`; returns when it was seen so. */
async function offlineWithin(handle: ServiceHandle, server: TestServer, since: number, ms: number): Promise<number> {
  await waitState(handle, server, 'offline', Math.max(1_000, since + ms - Date.now()));
  return Date.now() - since;
}

describe('a hostile tenant, from inside its confined server', () => {
  it('cannot unshare, take the first process descriptors, ptrace, mount, keyctl or bpf: seccomp refuses them', async () => {
    const handle = service();
    const server = service.track(
      await createServer(handle, {
        name: 'syscalls',
        startup:
          './syscall-probe; unshare -Ur true 2>&1 || echo "the unshare command was refused"; echo finished; exec sleep 1000',
      }),
    );
    install(server, 'syscall-probe', syscallProbeBinary());
    await power(handle, server, 'start');
    await waitFor(
      () => readLog(server).includes('finished'),
      () => `the probe; console log:\n${readLog(server)}`,
      15_000,
    );
    expect(Object.fromEntries(probeResults(readLog(server)))).toEqual(EXPECTED_PROBE_RESULTS);
    expect(readLog(server)).toContain('the unshare command was refused');
    expect((await resources(handle, server)).current_state).toBe('running');
  }, 60_000);

  it("runs under a uid of its own: another server's inotify exhaustion leaves it able to watch, and it cannot read the other's files through /proc", async () => {
    const handle = service();
    const hog = service.track(await createServer(handle, { name: 'inotify hog', startup: './syscall-probe inotify-hog' }));
    const victim = service.track(
      await createServer(handle, {
        name: 'victim',
        startup: 'echo "secret" > secret.txt; ./syscall-probe inotify-one; exec sleep 1000',
      }),
    );
    for (const server of [hog, victim]) install(server, 'syscall-probe', syscallProbeBinary());
    expect(hog.uid).not.toBe(victim.uid);
    expect([hog.uid, victim.uid]).not.toContain(SERVER_UID);

    await power(handle, hog, 'start');
    await waitFor(
      () => /inotify-hog: \d+ EMFILE/.test(readLog(hog)),
      () => `the hog; console log:\n${readLog(hog)}`,
      15_000,
    );
    const taken = Number(/inotify-hog: (\d+)/.exec(readLog(hog))![1]);
    expect(taken).toBeGreaterThan(0);
    await power(handle, victim, 'start');
    await waitFor(
      () => readLog(victim).includes('inotify-one:'),
      () => `the victim; console log:\n${readLog(victim)}`,
      15_000,
    );
    expect(readLog(victim)).toContain('inotify-one: ok');

    // Even a process that found the victim's first process (the host's pid) cannot read through it under another uid.
    const victimPid = (await runcList(handle.dataDir)).find((container) => container.id.endsWith(victim.uuid))!.pid;
    const readAs = (uid: number) => {
      try {
        return execFileSync(
          'setpriv',
          [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', 'cat', `/proc/${victimPid}/root/home/container/secret.txt`],
          {
            encoding: 'utf8',
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        );
      } catch (err) {
        return `refused: ${(err as { stderr?: string }).stderr ?? String(err)}`;
      }
    };
    expect(readAs(hog.uid)).toMatch(/^refused: .*Permission denied/);
    // The path is real: its own uid reads it.
    expect(readAs(victim.uid)).toBe('secret\n');
    expect(fs.statSync(victim.volumeDir).mode & 0o777).toBe(0o700);
  }, 60_000);

  it('--disk 50: writing 200 MB while running stops the server within 30 s, with the console line and server:process.disk-limit', async () => {
    const handle = service();
    const server = service.track(
      await createServer(handle, {
        name: 'disk hog',
        startup: 'dd if=/dev/zero of=big.bin bs=1M count=200 2>/dev/null; echo written; exec sleep 1000',
        limits: { disk: 50 },
      }),
    );
    await power(handle, server, 'start');
    await waitFor(
      () => readLog(server).includes('written'),
      () => `the write; console log:\n${readLog(server)}`,
      20_000,
    );
    const passed = Date.now();
    const took = await offlineWithin(handle, server, passed, 30_000);
    expect(took).toBeLessThan(30_000);
    expect(readLog(server)).toContain(`${DISK_LIMIT_LINE}\n`);
    expect(await systemEvents(handle, server, 'disk-limit')).toEqual([
      { event: 'server:process.disk-limit', actor: 'null_resource' },
    ]);
    expect((await resources(handle, server)).resources.disk_bytes).toBeGreaterThan(200 * MiB);
    // And it cannot start again over the limit.
    const res = await api(handle, 'POST', `/api/client/servers/${server.identifier}/power`, { signal: 'start' });
    expect(res.status).toBe(409);
    expect(res.body.errors[0].detail).toMatch(/MiB of 50 MiB/);
  }, 90_000);

  it('--disk 50: folders, symlinks and empty files are counted (blocks and inodes) and stop the server as well', async () => {
    const handle = service();
    const server = service.track(
      await createServer(handle, {
        name: 'inode hog',
        // 8,000 of each: 24,000 inodes (the default limit is 12,800) and 8,000 folders of 4 KiB (31 MiB).
        startup:
          'perl -e \'for (1..8000) { mkdir "d$_"; symlink "/etc/passwd", "l$_"; open my $f, ">", "e$_"; }\'; echo made; exec sleep 1000',
        limits: { disk: 50 },
      }),
    );
    await power(handle, server, 'start');
    await waitFor(
      () => readLog(server).includes('made'),
      () => `the hog; console log:\n${readLog(server)}`,
      30_000,
    );
    await offlineWithin(handle, server, Date.now(), 30_000);
    expect(readLog(server)).toContain(`${DISK_LIMIT_LINE}\n`);
    expect(await systemEvents(handle, server, 'disk-limit')).toHaveLength(1);
    expect((await resources(handle, server)).resources.disk_bytes).toBeGreaterThan(8000 * 4096);
    const res = await api(handle, 'POST', `/api/client/servers/${server.identifier}/power`, { signal: 'start' });
    expect(res.status).toBe(409);
    expect(res.body.errors[0].detail).toMatch(/files and folders of 12800/);
  }, 90_000);

  it('--disk 50: a program that writes 100 MB and deletes it at once, now and then, is not stopped', async () => {
    const handle = service();
    const server = service.track(
      await createServer(handle, {
        name: 'temporary files',
        startup: 'while :; do dd if=/dev/zero of=tmp.bin bs=1M count=100 2>/dev/null; rm tmp.bin; echo round; sleep 3; done',
        limits: { disk: 50 },
      }),
    );
    await power(handle, server, 'start');
    // Two and a half watch intervals.
    await sleep(25_000);
    expect(readLog(server)).toContain('round');
    expect(readLog(server)).not.toContain(DISK_LIMIT_LINE);
    expect((await resources(handle, server)).current_state).toBe('running');
  }, 60_000);
});
