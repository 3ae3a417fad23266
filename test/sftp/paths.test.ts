import fs from 'node:fs';
import path from 'node:path';
import type { SFTPWrapper } from 'ssh2';
import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/databases.js';
import { userWithPassword } from '../helpers/sign-in.js';
import { connectClient, loopbackAddress, openSftp, scratch, sftpBatch, useSftpHarness, volumeOf } from './helpers.js';

/** SSH_FX_* as an ssh2 client's error carries them. */
const PERMISSION_DENIED = 3;
const FAILURE = 4;

const failureOf = (run: (done: (err: unknown) => void) => void) =>
  new Promise<{ code?: number; message?: string } | undefined>((resolve) =>
    run((err) => resolve(err as { code?: number } | undefined)),
  );

function writeAll(sftp: SFTPWrapper, file: string, bytes: number, chunk = 64 * 1024) {
  return new Promise<void>((resolve, reject) => {
    sftp.open(file, 'w', (err, handle) => {
      if (err) return reject(err);
      let position = 0;
      const next = () => {
        if (position >= bytes) return sftp.close(handle, () => resolve());
        const length = Math.min(chunk, bytes - position);
        sftp.write(handle, Buffer.alloc(length, 1), 0, length, position, (writeErr) => {
          if (writeErr) return sftp.close(handle, () => reject(writeErr));
          position += length;
          next();
        });
      };
      next();
    });
  });
}

/** Paths stay in the volume (docs/reference/files-and-sftp.md), and every byte counts against the disk limit. */
describeEachDatabase('sftp paths and limits', (database) => {
  const h = useSftpHarness(database);

  it('keeps `cd ..` at the root, and refuses an operation whose path climbs above it', async () => {
    const owner = await userWithPassword(h);
    const server = await h.make.server(owner.user);
    fs.writeFileSync(path.join(volumeOf(h, server), 'inside.txt'), 'in\n');
    const login = `${owner.user.username}.${server.uuid_short}`;
    const result = await sftpBatch(h.sftp.port, login, owner.password, ['cd ..', 'pwd', 'cd ../../../etc/..', 'pwd', 'ls'], {
      from: loopbackAddress(),
    });
    expect(result.code).toBe(0);
    expect(result.stdout.match(/Remote working directory: \/\n/g)).toHaveLength(2);
    expect(result.stdout).toMatch(/inside\.txt/);

    const client = await connectClient(h.sftp.port, login, owner.password);
    try {
      const sftp = await openSftp(client);
      expect((await failureOf((done) => sftp.stat('/../etc/passwd', done)))?.code).toBe(PERMISSION_DENIED);
      expect((await failureOf((done) => sftp.readdir('../..', done)))?.code).toBe(PERMISSION_DENIED);
      expect((await failureOf((done) => sftp.open('/../../tmp/escaped', 'w', done)))?.code).toBe(PERMISSION_DENIED);
      expect((await failureOf((done) => sftp.symlink('/etc/passwd', '/made-link', done)))?.code).toBe(8);
    } finally {
      client.end();
    }
  });

  it('refuses to list or read through links that point out of the volume', async () => {
    const owner = await userWithPassword(h);
    const server = await h.make.server(owner.user);
    const volume = volumeOf(h, server);
    fs.symlinkSync('/etc', path.join(volume, 'etc-link'));
    fs.symlinkSync('/etc/passwd', path.join(volume, 'passwd-link'));
    const local = scratch();
    const login = `${owner.user.username}.${server.uuid_short}`;
    const from = loopbackAddress();

    const listed = await sftpBatch(h.sftp.port, login, owner.password, ['ls -l'], { from });
    expect(listed.stdout).toMatch(/^l.* etc-link$/m);
    // A link is reported as a link (STAT never follows it), so `ls` shows the link itself and nothing of /etc.
    const throughLink = await sftpBatch(h.sftp.port, login, owner.password, ['ls etc-link/', 'ls -l etc-link'], { from });
    expect(throughLink.stdout).not.toMatch(/passwd|hostname|os-release/);
    for (const command of ['get passwd-link', 'get etc-link/passwd', 'ls etc-link/passwd', 'cd etc-link']) {
      const result = await sftpBatch(h.sftp.port, login, owner.password, [command], { cwd: local, from });
      expect(result.code, command).not.toBe(0);
      expect(result.stdout, command).not.toMatch(/root:/);
    }
    expect(fs.readdirSync(local)).toEqual([]);

    const client = await connectClient(h.sftp.port, login, owner.password);
    try {
      const sftp = await openSftp(client);
      expect((await failureOf((done) => sftp.readdir('/etc-link', done)))?.code).toBe(PERMISSION_DENIED);
      // The link itself is never followed (the files layer calls it "not a file": SSH_FX_FAILURE).
      expect(await failureOf((done) => sftp.open('/passwd-link', 'r', done))).toMatchObject({
        code: FAILURE,
        message: /symlink/,
      });
      expect((await failureOf((done) => sftp.open('/etc-link/passwd', 'r', done)))?.code).toBe(PERMISSION_DENIED);
      expect((await failureOf((done) => sftp.open('/etc-link/quetzal-escape', 'w', done)))?.code).toBe(PERMISSION_DENIED);
    } finally {
      client.end();
    }
    expect(fs.existsSync('/etc/quetzal-escape')).toBe(false);
  });

  it('refuses a put past the disk limit with SSH_FX_FAILURE and a sentence, and the volume stays within it', async () => {
    const owner = await userWithPassword(h);
    const server = await h.make.server(owner.user, { limits: { diskMiB: 1 } });
    const volume = volumeOf(h, server);
    const local = scratch();
    fs.writeFileSync(path.join(local, 'big.dat'), Buffer.alloc(3 * 1024 * 1024, 5));
    const login = `${owner.user.username}.${server.uuid_short}`;

    const put = await sftpBatch(h.sftp.port, login, owner.password, ['put big.dat'], { cwd: local, from: loopbackAddress() });
    expect(put.code).not.toBe(0);
    const used = fs.readdirSync(volume).reduce((sum, name) => sum + fs.statSync(path.join(volume, name)).size, 0);
    expect(used).toBeLessThanOrEqual(1024 * 1024);

    const client = await connectClient(h.sftp.port, login, owner.password);
    try {
      const sftp = await openSftp(client);
      const err = (await writeAll(sftp, '/again.dat', 3 * 1024 * 1024).then(
        () => undefined,
        (e: unknown) => e,
      )) as { code?: number; message?: string } | undefined;
      expect(err?.code).toBe(FAILURE);
      expect(err?.message).toMatch(/disk limit/);
      // Within the limit, a write goes through.
      await writeAll(sftp, '/small.dat', 10_000);
    } finally {
      client.end();
    }
    expect(fs.statSync(path.join(volume, 'small.dat')).size).toBe(10_000);
  });

  it('holds the volume while a file is open for writing: a backup waits its turn (409), and is allowed again once it is closed', async () => {
    const owner = await userWithPassword(h);
    const server = await h.make.server(owner.user);
    const client = await connectClient(h.sftp.port, `${owner.user.username}.${server.uuid_short}`, owner.password);
    try {
      const sftp = await openSftp(client);
      const handle = await new Promise<Buffer>((resolve, reject) =>
        sftp.open('/upload.bin', 'w', (err, h2) => (err ? reject(err) : resolve(h2))),
      );
      const inFlight = async () =>
        (
          await h.db.db
            .selectFrom('servers')
            .select('volume_changes_in_flight')
            .where('id', '=', server.id)
            .executeTakeFirstOrThrow()
        ).volume_changes_in_flight;
      expect(await inFlight()).toBe(1);
      const refused = await h.request(owner.token, {
        method: 'POST',
        url: `/api/client/servers/${server.uuid_short}/backups`,
        payload: {},
      });
      expect(refused.statusCode).toBe(409);
      await new Promise<void>((resolve, reject) => sftp.close(handle, (err) => (err ? reject(err) : resolve())));
      expect(await inFlight()).toBe(0);
      const accepted = await h.request(owner.token, {
        method: 'POST',
        url: `/api/client/servers/${server.uuid_short}/backups`,
        payload: {},
      });
      expect(accepted.statusCode).toBe(200);
    } finally {
      client.end();
    }
    await h.jobs.idle();
  });
});
