/**
 * docs/reference/containment.md through a real service (issue 11): with CONTAINMENT=on a server's
 * process sees nothing of DATA_DIR (database, keys, other volumes, backups,
 * logs), nothing of the service's processes or environment, runs as
 * a uid of its own (SERVER_UID_RANGE), can write only its volume and its own /tmp, and still talks
 * through the console. Needs root and runc: without them the service refuses
 * to start and these tests fail with its reason.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  api,
  createServer,
  ENV_CANARY,
  power,
  readLog,
  SERVER_UID,
  startService,
  stopService,
  useService,
  waitFor,
  waitState,
} from './confined-service.js';

const service = useService();

/** Tries what a hostile server would, and writes what worked to report.txt (renamed into place when complete). */
function probeScript(dataDir: string, selfUuid: string, otherUuid: string): string {
  return `
out=report.partial
: > "$out"
say() { echo "$1" >> "$out"; }
try_read() { if cat "$2" > /dev/null 2>&1; then say "read $1: yes"; else say "read $1: no"; fi; }
try_list() { if ls -A "$2" > /dev/null 2>&1; then say "list $1: yes"; else say "list $1: no"; fi; }
try_write() { if (echo probe > "$2") 2> /dev/null; then say "write $1: yes"; else say "write $1: no"; fi; }

try_read database '${dataDir}/quetzal.sqlite'
try_read database-wal '${dataDir}/quetzal.sqlite-wal'
try_read initial-api-key '${dataDir}/initial-api-key'
try_read other-volume '${dataDir}/volumes/${otherUuid}/canary.txt'
try_read other-volume-sibling '../${otherUuid}/canary.txt'
try_read own-console-log '${dataDir}/logs/${selfUuid}.log'
try_read shadow /etc/shadow
try_list data-dir '${dataDir}'
try_list backups '${dataDir}/backups'
try_list logs '${dataDir}/logs'
try_list volumes '${dataDir}/volumes'
try_list run '${dataDir}/run'

try_write usr /usr/quetzal-probe-${selfUuid}
try_write etc /etc/quetzal-probe-${selfUuid}
try_write root /quetzal-probe-${selfUuid}
try_write home /home/quetzal-probe-${selfUuid}
try_write data-dir '${dataDir}/quetzal-probe'
try_write other-volume '${dataDir}/volumes/${otherUuid}/quetzal-probe'
try_write tmp /tmp/quetzal-probe-${selfUuid}
try_write volume /home/container/written-inside.txt
try_read tmp-back /tmp/quetzal-probe-${selfUuid}

if cat /proc/[0-9]*/environ 2> /dev/null | tr '\\0' '\\n' | grep -q -e '${dataDir}' -e '${ENV_CANARY}'; then
  say "service environ: yes"
else
  say "service environ: no"
fi
say "pids: $(cd /proc && echo [0-9]*)"
say "uid: $(id -u)"
say "gid: $(id -g)"
say "groups: $(id -G)"
say "cwd: $(pwd)"
say "home: $(ls -A /home)"
env > env.txt
mv "$out" report.txt
exec sleep 1000
`;
}

function parseReport(text: string): Map<string, string> {
  const entries = new Map<string, string>();
  for (const line of text.split('\n')) {
    const colon = line.indexOf(': ');
    if (colon > 0) entries.set(line.slice(0, colon), line.slice(colon + 2));
  }
  return entries;
}

describe('containment through a real service', () => {
  it('GET /health says "containment":"on" when confined, and "off" with CONTAINMENT=off', async () => {
    const on = await fetch(`http://127.0.0.1:${service().port}/health`);
    expect(on.status).toBe(200);
    expect(await on.json()).toEqual({ status: 'ok', containment: 'on' });

    const off = await startService(undefined, undefined, { CONTAINMENT: 'off' });
    try {
      const res = await fetch(`http://127.0.0.1:${off.port}/health`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ status: 'ok', containment: 'off' });
    } finally {
      await stopService(off);
      fs.rmSync(off.dataDir, { recursive: true, force: true });
    }
  }, 90_000);

  it("keeps the service's own files private on the host: DATA_DIR 0700, the database and initial-api-key 0600", async () => {
    const { dataDir } = service();
    const mode = (file: string) => fs.statSync(file).mode & 0o777;
    expect(mode(dataDir)).toBe(0o700);
    expect(mode(path.join(dataDir, 'initial-api-key'))).toBe(0o600);
    expect(mode(path.join(dataDir, 'quetzal.sqlite'))).toBe(0o600);
    // Its side files hold the same data.
    for (const side of ['quetzal.sqlite-wal', 'quetzal.sqlite-shm']) {
      const file = path.join(dataDir, side);
      if (fs.existsSync(file)) expect(mode(file), side).toBe(0o600);
    }
  });

  it("lets a confined server see none of DATA_DIR, the service's processes or environment, and write only its volume and its own /tmp", async () => {
    const handle = service();
    const other = service.track(await createServer(handle, { name: 'canary holder' }));
    const secret = `secret of ${other.uuid}`;
    fs.writeFileSync(path.join(other.volumeDir, 'canary.txt'), secret);
    const probe = service.track(await createServer(handle, { name: 'probe', startup: 'sh probe.sh' }));
    fs.writeFileSync(path.join(probe.volumeDir, 'probe.sh'), probeScript(handle.dataDir, probe.uuid, other.uuid));

    await power(handle, probe, 'start');
    const reportFile = path.join(probe.volumeDir, 'report.txt');
    await waitFor(
      () => fs.existsSync(reportFile),
      () => `the probe's report; console log:\n${readLog(probe)}`,
      15_000,
    );
    const report = parseReport(fs.readFileSync(reportFile, 'utf8'));
    const env = fs.readFileSync(path.join(probe.volumeDir, 'env.txt'), 'utf8');

    // Every one of these exists on the host (the canary, the database, the key, the folders).
    expect(fs.readFileSync(path.join(other.volumeDir, 'canary.txt'), 'utf8')).toBe(secret);
    for (const name of ['quetzal.sqlite', 'initial-api-key', 'backups', 'logs', 'volumes', 'run'])
      expect(fs.existsSync(path.join(handle.dataDir, name)), name).toBe(true);

    const reads = [...report].filter(([key]) => key.startsWith('read ') && key !== 'read tmp-back');
    expect(reads.length).toBe(7);
    expect(reads.filter(([, result]) => result !== 'no')).toEqual([]);
    const lists = [...report].filter(([key]) => key.startsWith('list '));
    expect(lists.length).toBe(5);
    expect(lists.filter(([, result]) => result !== 'no')).toEqual([]);
    for (const outside of ['usr', 'etc', 'root', 'home', 'data-dir', 'other-volume'])
      expect(report.get(`write ${outside}`), `write ${outside}`).toBe('no');
    expect(fs.existsSync(path.join(other.volumeDir, 'quetzal-probe'))).toBe(false);
    for (const dir of ['/usr', '/etc', '/', '/home'])
      expect(fs.existsSync(path.join(dir, `quetzal-probe-${probe.uuid}`)), dir).toBe(false);

    // Its volume and its own /tmp are writable; that /tmp is not the host's.
    expect(report.get('write volume')).toBe('yes');
    expect(fs.readFileSync(path.join(probe.volumeDir, 'written-inside.txt'), 'utf8')).toBe('probe\n');
    expect(report.get('write tmp')).toBe('yes');
    expect(report.get('read tmp-back')).toBe('yes');
    expect(fs.existsSync(`/tmp/quetzal-probe-${probe.uuid}`)).toBe(false);

    // Its own PID namespace: only its own few processes, nothing of the service's environment.
    expect(report.get('service environ')).toBe('no');
    const pids = report.get('pids')!.split(' ').map(Number);
    expect(pids).toContain(1);
    expect(pids.length).toBeLessThanOrEqual(4);
    expect(pids).not.toContain(handle.service.proc.pid);

    expect(report.get('uid')).toBe(String(probe.uid));
    expect(report.get('gid')).toBe(String(probe.uid));
    expect(report.get('groups')).toBe(String(probe.uid));
    expect(probe.uid).not.toBe(SERVER_UID);
    expect(report.get('cwd')).toBe('/home/container');
    expect(report.get('home')).toBe('container');

    const names = env.split('\n').map((line) => line.slice(0, line.indexOf('=')));
    for (const name of ['DATABASE_URL', 'DATA_DIR', ENV_CANARY, 'PORT', 'APP_KEY']) expect(names, name).not.toContain(name);
    expect(env).not.toContain(handle.dataDir);
    expect(env).toContain('HOME=/home/container\n');

    await power(handle, probe, 'stop');
    await waitState(handle, probe, 'offline', 15_000);
  }, 60_000);

  it("passes console commands to the confined process's standard input and its output to the console log", async () => {
    const handle = service();
    const server = service.track(
      await createServer(handle, { name: 'echo', startup: 'while read -r line; do echo "got: $line as $(id -u)"; done' }),
    );
    await power(handle, server, 'start');
    await waitState(handle, server, 'running');

    for (const line of ['hello from the panel', 'say "quoted" & $HOME']) {
      const res = await api(handle, 'POST', `/api/client/servers/${server.identifier}/command`, { command: line });
      expect(res.status, JSON.stringify(res.body)).toBe(204);
      await waitFor(
        () => readLog(server).includes(`got: ${line} as ${server.uid}\n`),
        () => `the echo of "${line}":\n${readLog(server)}`,
      );
    }

    await power(handle, server, 'stop');
    await waitState(handle, server, 'offline', 15_000);
    const res = await api(handle, 'POST', `/api/client/servers/${server.identifier}/command`, { command: 'too late' });
    expect(res.status).toBe(502);
  }, 60_000);
});
