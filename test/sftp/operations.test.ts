import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { FLUSH_MS } from '../../src/modules/sftp/sftp.activity.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { userWithPassword } from '../helpers/sign-in.js';
import { eventually, loopbackAddress, scratch, sftpBatch, sftpEvents, useSftpHarness, volumeOf } from './helpers.js';

/** OpenSSH's sftp client against the real SFTP server (docs/reference/files-and-sftp.md): every everyday command, and what each logs. */
const BURST = 100;

describeEachDatabase('sftp operations', (database) => {
  const h = useSftpHarness(database);

  it('lists, puts, gets, renames, makes and removes folders and files, and chmods, as the owner', async () => {
    const owner = await userWithPassword(h);
    const server = await h.make.server(owner.user);
    const volume = volumeOf(h, server);
    fs.writeFileSync(path.join(volume, 'server.properties'), 'motd=hello\n');
    const local = scratch();
    fs.writeFileSync(path.join(local, 'world.dat'), Buffer.alloc(300_000, 7));
    const login = `${owner.user.username}.${server.uuid_short}`;
    const from = loopbackAddress();

    const result = await sftpBatch(
      h.sftp.port,
      login,
      owner.password,
      [
        'ls -l',
        'mkdir plugins',
        'put world.dat plugins/world.dat',
        'get server.properties copy.properties',
        'rename server.properties renamed.properties',
        'chmod 600 renamed.properties',
        'mkdir empty',
        'rmdir empty',
        'put world.dat scratch.dat',
        'rm scratch.dat',
        'ls -l plugins',
      ],
      { cwd: local, from },
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/-rw-r--r-- +1 container container +11 \w{3} [ \d]\d \d\d:\d\d server\.properties/);
    expect(result.stdout).toMatch(/-rw-r--r-- .* 300000 .* world\.dat/);

    expect(fs.readFileSync(path.join(volume, 'plugins/world.dat')).equals(Buffer.alloc(300_000, 7))).toBe(true);
    expect(fs.readFileSync(path.join(local, 'copy.properties'), 'utf8')).toBe('motd=hello\n');
    expect(fs.existsSync(path.join(volume, 'server.properties'))).toBe(false);
    expect(fs.statSync(path.join(volume, 'renamed.properties')).mode & 0o777).toBe(0o600);
    expect(fs.existsSync(path.join(volume, 'empty'))).toBe(false);
    expect(fs.existsSync(path.join(volume, 'scratch.dat'))).toBe(false);

    // Batched per kind, written when the session ends; the user and the client's address on each.
    const events = await eventually(async () => {
      const found = await sftpEvents(h, server.id);
      return found.some((e) => e.event === 'server:sftp.delete') ? found : undefined;
    });
    expect(events.every((e) => e.actor === owner.user.id && e.ip === from)).toBe(true);
    const byEvent = Object.fromEntries(events.map((e) => [e.event, e.properties]));
    expect(byEvent['server:sftp.rename']).toEqual({ from: '/server.properties', to: '/renamed.properties', using_sftp: true });
    expect(byEvent['server:sftp.create-directory']).toEqual({ files: ['/plugins', '/empty'], using_sftp: true });
    expect(byEvent['server:sftp.create']).toEqual({ files: ['/plugins/world.dat', '/scratch.dat'], using_sftp: true });
    expect(byEvent['server:sftp.delete']).toEqual({ files: ['/empty', '/scratch.dat'], using_sftp: true });
    expect(events.filter((e) => e.event !== 'server:sftp.rename')).toHaveLength(3);
  });

  it('logs writing over an existing file as server:sftp.write, and a 100-file burst as an entry per few seconds', async () => {
    const owner = await userWithPassword(h);
    const server = await h.make.server(owner.user);
    fs.writeFileSync(path.join(volumeOf(h, server), 'config.yml'), 'old: true\n');
    const local = scratch();
    fs.writeFileSync(path.join(local, 'config.yml'), 'new: true\n');
    fs.mkdirSync(path.join(local, 'many'));
    for (let i = 0; i < BURST; i++) fs.writeFileSync(path.join(local, 'many', `f${i}.txt`), `${i}`);

    const startedAt = Date.now();
    const result = await sftpBatch(
      h.sftp.port,
      `${owner.user.username}.${server.uuid}`,
      owner.password,
      ['put config.yml', 'mkdir many', 'put many/* many/'],
      { cwd: local, from: loopbackAddress() },
    );
    const sessionMs = Date.now() - startedAt;
    expect(result.code).toBe(0);
    expect(fs.readFileSync(path.join(volumeOf(h, server), 'config.yml'), 'utf8')).toBe('new: true\n');
    expect(fs.readdirSync(path.join(volumeOf(h, server), 'many'))).toHaveLength(BURST);

    const events = await eventually(async () => {
      const found = await sftpEvents(h, server.id);
      return found.some((e) => e.event === 'server:sftp.create') ? found : undefined;
    });
    expect(events.find((e) => e.event === 'server:sftp.write')?.properties).toEqual({ files: ['/config.yml'], using_sftp: true });
    const created = events.filter((e) => e.event === 'server:sftp.create');
    // One entry per kind every FLUSH_MS (and one at the session's end), never one a file: however long the
    // machine took for the burst (seconds quiet, tens of seconds beside a restore's syncfs on CI).
    expect(created.length).toBeLessThanOrEqual(Math.ceil(sessionMs / FLUSH_MS) + 2);
    expect(created.length).toBeLessThan(BURST / 10);
    expect(created.flatMap((e) => e.properties.files as string[])).toHaveLength(BURST);
    // Each file opened for writing holds the volume (two transactions): 5–30 ms a file on a busy CI machine.
  }, 60_000);

  it('shows the activity through the activity route with using_sftp kept out of the additional metadata', async () => {
    const owner = await userWithPassword(h);
    const server = await h.make.server(owner.user);
    const from = loopbackAddress();
    const login = `${owner.user.username}.${server.uuid_short}`;
    expect((await sftpBatch(h.sftp.port, login, owner.password, ['mkdir logs'], { from })).code).toBe(0);
    await eventually(async () => ((await sftpEvents(h, server.id)).length > 0 ? true : undefined));
    const res = await h.request(owner.token, { method: 'GET', url: `/api/client/servers/${server.uuid_short}/activity` });
    expect(res.statusCode).toBe(200);
    const [entry] = res.json().data as { attributes: Record<string, unknown> }[];
    expect(entry?.attributes).toMatchObject({
      event: 'server:sftp.create-directory',
      ip: from,
      has_additional_metadata: false,
      properties: { files: ['/logs'], using_sftp: true },
    });
  });
});
