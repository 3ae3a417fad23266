/**
 * A service SIGKILLed mid-install (docs/reference/eggs-and-installs.md), for real: `quetzal serve` with
 * CONTAINMENT=on runs a reinstall whose script sleeps; the whole service
 * process group is SIGKILLed. What it leaves: the server `installing`, and
 * the installer box still running under runc (its own session, outside the
 * service's group). The next start (recoverInstalls) ends the box, writes
 * why as the install log's last line and marks the server `install_failed`.
 * Then `server:reinstall` (the admin's retry, beside the running service)
 * installs it: it prints `{"uuid", "status": null}`.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { openSqliteConnection } from '../../src/db/sqlite-driver.js';
import { waitHealthy } from '../platform/service-process.js';
import {
  api,
  cli,
  createServer,
  launchService,
  newDataDir,
  runcList,
  startService,
  stopService,
  waitFor,
  type ServiceHandle,
} from '../containment/confined-service.js';

const dataDir = newDataDir();
const handles: ServiceHandle[] = [];

afterAll(async () => {
  for (const handle of handles) await stopService(handle).catch(() => undefined);
  fs.rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

function sql(statement: string, parameters: unknown[]): unknown {
  const db = openSqliteConnection(path.join(dataDir, 'quetzal.sqlite'));
  try {
    const prepared = db.prepare(statement);
    return prepared.reader ? prepared.get(parameters) : prepared.run(parameters);
  } finally {
    db.close();
  }
}

const EGG_UUID = randomUUID();

/** A PTDL_v2 export whose install script is `script` (CRLF line ends, as exported eggs have them). */
function eggFile(script: string): string {
  const file = path.join(dataDir, `egg-${randomUUID()}.json`);
  const egg = {
    _comment: 'DO NOT EDIT: FILE GENERATED AUTOMATICALLY BY PTERODACTYL PANEL - PTERODACTYL.IO',
    meta: { version: 'PTDL_v2', update_url: null },
    exported_at: '2026-11-26T12:00:00+00:00',
    name: 'Sleeper',
    author: 'tests@quetzal.test',
    uuid: EGG_UUID,
    description: 'An install that takes its time.',
    features: null,
    docker_images: { Host: 'host' },
    file_denylist: [],
    startup: 'node server.mjs',
    config: { files: '{}', startup: '{"done":"hello"}', logs: '{}', stop: '^C' },
    scripts: {
      installation: {
        script: script.replace(/\n/g, '\r\n'),
        container: 'ghcr.io/pterodactyl/installers:alpine',
        entrypoint: 'bash',
      },
    },
    variables: [],
  };
  fs.writeFileSync(file, JSON.stringify(egg));
  return file;
}

const statusOf = (uuid: string) => (sql('select status from servers where uuid = ?', [uuid]) as { status: string | null }).status;

it('leaves the server installing and its box running; the next start ends the box and marks it install_failed', async () => {
  const first = await startService(dataDir);
  handles.push(first);
  const server = await createServer(first, { name: 'crash mid-install' });
  // An egg in Pterodactyl's export format, through `egg:import`.
  const egg = await cli(first, ['egg:import', '--file', eggFile('echo "sleeping"\nsleep 300\necho "never"')]);
  sql('update servers set egg_id = ? where uuid = ?', [egg.id, server.uuid]);

  const res = await api(first, 'POST', `/api/client/servers/${server.identifier}/settings/reinstall`);
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  const log = path.join(dataDir, 'logs', `${server.uuid}.install.log`);
  await waitFor(() => fs.existsSync(log) && fs.readFileSync(log, 'utf8').includes('sleeping'), 'the install to print', 30_000);

  // SIGKILL: the service and everything in its process group.
  first.service.dispose();
  await first.service.exited;
  handles.pop();
  const box = `qzinstall-${server.uuid}`;
  expect((await runcList(dataDir)).filter((c) => c.id === box).map((c) => c.status)).toEqual(['running']);
  expect(statusOf(server.uuid)).toBe('installing');

  // The next start, with the same settings.
  const second = launchService(first.env);
  const handle = { ...first, service: second };
  handles.push(handle);
  await waitHealthy(second, 60_000);
  expect(statusOf(server.uuid)).toBe('install_failed');
  expect((await runcList(dataDir)).map((c) => c.id)).not.toContain(box);
  const lines = fs.readFileSync(log, 'utf8').trimEnd().split('\n');
  expect(lines).toEqual(['sleeping', '[Quetzal] the install failed: the service stopped during the install']);
  expect(fs.existsSync(path.join(dataDir, 'run', 'installs', `${server.uuid}.owner`))).toBe(false);

  // The admin's retry, beside the running service: confined as its servers are.
  // The same egg (same uuid) imported again with a script that ends: updated in place.
  expect(await cli(handle, ['egg:import', '--file', eggFile('echo "again" > /mnt/server/marker.txt')])).toEqual(egg);
  expect(await cli(handle, ['server:reinstall', '--server', server.uuid])).toEqual({ uuid: server.uuid, status: null });
  expect(statusOf(server.uuid)).toBeNull();
  const marker = path.join(server.volumeDir, 'marker.txt');
  expect(fs.readFileSync(marker, 'utf8')).toBe('again\n');
  expect(fs.statSync(marker).uid).toBe(server.uid);
  expect(sql("select count(*) as n from activity_logs where event = 'server:reinstall'", [])).toEqual({ n: 2 });
}, 180_000);
