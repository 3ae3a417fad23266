import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import ssh2 from 'ssh2';
import { expect, it } from 'vitest';
import { signInToSftp, type SftpKeyProof } from '../../src/modules/sftp/sftp.sign-in.js';
import type { Harness } from '../helpers/harness.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { userWithPassword } from '../helpers/sign-in.js';
import { eventually, loopbackAddress, openSftp, scratch, useSftpHarness, volumeOf, type BatchResult } from './helpers.js';
import { scratchDir } from '../helpers/scratch.js';

function makeKey(type: 'ed25519' | 'rsa' | 'ecdsa') {
  const dir = scratchDir('quetzal-key-');
  const file = path.join(dir, 'id');
  execFileSync('ssh-keygen', ['-q', '-t', type, '-N', '', '-C', 'test', '-f', file]);
  return { file, publicKey: fs.readFileSync(`${file}.pub`, 'utf8').trim(), privateKey: fs.readFileSync(file) };
}

/** OpenSSH's `sftp -i key` in batch mode: public key only, no password prompt. */
function sftpWithKey(port: number, login: string, keyFile: string, commands: string[], cwd: string): Promise<BatchResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'sftp',
      [
        '-b',
        '-',
        '-i',
        keyFile,
        '-P',
        String(port),
        '-o',
        'IdentitiesOnly=yes',
        '-o',
        'PreferredAuthentications=publickey',
        '-o',
        'StrictHostKeyChecking=no',
        '-o',
        'UserKnownHostsFile=/dev/null',
        '-o',
        'LogLevel=ERROR',
        '-o',
        `BindAddress=${loopbackAddress()}`,
        `${login}@127.0.0.1`,
      ],
      { cwd, stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, SSH_AUTH_SOCK: '' } },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(`${commands.join('\n')}\n`);
  });
}

function connectWithKey(port: number, username: string, privateKey: Buffer): Promise<ssh2.Client> {
  return new Promise((resolve, reject) => {
    const client = new ssh2.Client();
    client.once('ready', () => resolve(client));
    client.once('error', reject);
    client.connect({ host: '127.0.0.1', port, username, privateKey, localAddress: loopbackAddress(), readyTimeout: 20_000 });
  });
}

async function addKey(h: Harness, token: string, publicKey: string) {
  const res = await h.request(token, {
    method: 'POST',
    url: '/api/client/account/ssh-keys',
    payload: { name: 'k', public_key: publicKey },
  });
  expect(res.statusCode).toBe(200);
  return res.json().attributes.fingerprint as string;
}

/** SFTP `publickey` sign-in with the account's SSH keys (docs/reference/accounts.md), under the same rules as passwords. */
describeEachDatabase('sftp public keys', (database) => {
  const h = useSftpHarness(database, {}, { recheckMs: 1_000 });

  it("OpenSSH's sftp -i signs in with an account key, and not with a key the account lacks", async () => {
    const owner = await userWithPassword(h);
    const server = await h.make.server(owner.user);
    const key = makeKey('ed25519');
    const login = `${owner.user.username}.${server.uuid_short}`;
    const cwd = scratch();
    fs.writeFileSync(path.join(cwd, 'up.txt'), 'by key');

    const before = await sftpWithKey(h.sftp.port, login, key.file, ['put up.txt'], cwd);
    expect(before.code).not.toBe(0);
    await addKey(h, owner.token, key.publicKey);
    const after = await sftpWithKey(h.sftp.port, login, key.file, ['put up.txt'], cwd);
    expect(after.stderr).toBe('');
    expect(after.code).toBe(0);
    expect(fs.readFileSync(path.join(volumeOf(h, server), 'up.txt'), 'utf8')).toBe('by key');
    // RSA: OpenSSH signs with rsa-sha2-512, which the check verifies with the hash it names.
    const rsa = makeKey('rsa');
    await addKey(h, owner.token, rsa.publicKey);
    const byRsa = await sftpWithKey(h.sftp.port, login, rsa.file, ['ls'], cwd);
    expect(byRsa.stderr).toBe('');
    expect(byRsa.stdout).toContain('up.txt');

    // Another user's key does not open this account; this account's key does not open a server it cannot see.
    const other = await userWithPassword(h);
    const otherKey = makeKey('rsa');
    await addKey(h, other.token, otherKey.publicKey);
    expect((await sftpWithKey(h.sftp.port, login, otherKey.file, ['ls'], cwd)).code).not.toBe(0);
    const foreign = await h.make.server(other.user);
    expect((await sftpWithKey(h.sftp.port, `${owner.user.username}.${foreign.uuid_short}`, key.file, ['ls'], cwd)).code).not.toBe(
      0,
    );
  });

  it('the ssh2 client signs in with an ECDSA key; removing the key ends the session', async () => {
    const owner = await userWithPassword(h);
    const server = await h.make.server(owner.user);
    const key = makeKey('ecdsa');
    const fingerprint = await addKey(h, owner.token, key.publicKey);
    const client = await connectWithKey(h.sftp.port, `${owner.user.username}.${server.uuid_short}`, key.privateKey);
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    const sftp = await openSftp(client);
    const listed = await new Promise<ssh2.FileEntry[]>((resolve, reject) =>
      sftp.readdir('/', (err, list) => (err ? reject(err) : resolve(list))),
    );
    expect(Array.isArray(listed)).toBe(true);
    let ended = false;
    void closed.then(() => (ended = true));
    const removed = await h.request(owner.token, {
      method: 'POST',
      url: '/api/client/account/ssh-keys/remove',
      payload: { fingerprint },
    });
    expect(removed.statusCode).toBe(204);
    await eventually(async () => (ended ? true : undefined));
    await expect(connectWithKey(h.sftp.port, `${owner.user.username}.${server.uuid_short}`, key.privateKey)).rejects.toThrow();
  });

  it('a key is accepted only with a valid signature over the session blob (ssh2 documented check)', async () => {
    const owner = await userWithPassword(h);
    const server = await h.make.server(owner.user);
    const key = makeKey('ed25519');
    await addKey(h, owner.token, key.publicKey);
    const parsed = ssh2.utils.parseKey(key.privateKey) as ssh2.ParsedKey;
    const data = parsed.getPublicSSH();
    const blob = Buffer.from('session blob');
    const login = `${owner.user.username}.${server.uuid_short}`;
    const attempt = (proof: Partial<SftpKeyProof>) =>
      signInToSftp(h.deps, { login, ip: loopbackAddress(), key: { algo: parsed.type, data, ...proof } });
    expect(await attempt({})).toEqual({ ok: false, reason: 'key-acceptable' });
    expect(await attempt({ blob, signature: Buffer.alloc(64) })).toEqual({ ok: false, reason: 'credentials' });
    expect(await attempt({ blob: Buffer.from('another blob'), signature: parsed.sign(blob) })).toEqual({
      ok: false,
      reason: 'credentials',
    });
    const ok = await attempt({ blob, signature: parsed.sign(blob) });
    expect(ok.ok).toBe(true);
    const stranger = makeKey('ed25519');
    const strangerKey = ssh2.utils.parseKey(stranger.privateKey) as ssh2.ParsedKey;
    const unknown = await signInToSftp(h.deps, {
      login,
      ip: loopbackAddress(),
      key: { algo: strangerKey.type, data: strangerKey.getPublicSSH() },
    });
    expect(unknown).toEqual({ ok: false, reason: 'credentials' });
  });

  it("a wrong SFTP password is logged on the account as auth:sftp.fail (Pterodactyl's), a key failure is not", async () => {
    const owner = await userWithPassword(h);
    const server = await h.make.server(owner.user);
    const login = `${owner.user.username}.${server.uuid_short}`;
    expect(await signInToSftp(h.deps, { login, password: 'wrong password', ip: loopbackAddress() })).toEqual({
      ok: false,
      reason: 'credentials',
    });
    const key = ssh2.utils.parseKey(makeKey('ed25519').privateKey) as ssh2.ParsedKey;
    const blob = Buffer.from('blob');
    const data = key.getPublicSSH();
    const proof = { algo: key.type, data, blob, signature: key.sign(blob) };
    expect((await signInToSftp(h.deps, { login, key: proof, ip: loopbackAddress() })).ok).toBe(false);
    const res = await h.request(owner.token, { method: 'GET', url: '/api/client/account/activity' });
    expect(res.json().data.map((e: { attributes: { event: string; properties: object } }) => e.attributes)).toEqual([
      expect.objectContaining({ event: 'auth:sftp.fail', properties: { method: 'password' }, has_additional_metadata: false }),
    ]);
  });

  it('a subuser without file.sftp is refused with their key too', async () => {
    const owner = await userWithPassword(h);
    const server = await h.make.server(owner.user);
    const sub = await h.make.subuser(server, ['file.read']);
    const key = makeKey('ed25519');
    await addKey(h, sub.token, key.publicKey);
    await expect(connectWithKey(h.sftp.port, `${sub.user.username}.${server.uuid_short}`, key.privateKey)).rejects.toThrow();
  });
});
