import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { expect, it } from 'vitest';
import { loadHostKey, HOST_KEY_FILE } from '../../src/modules/sftp/sftp.host-key.js';
import { hashPassword } from '../../src/modules/users/passwords.js';
import { describeEachDialect, getJson, startService, useSandbox } from '../cli/helpers.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import { loopbackAddress, sftpBatch } from './helpers.js';

/** Child processes are slow on a busy two-core machine. */
const SPAWN_TIMEOUT_MS = 120_000;

async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** The host key's fingerprint as OpenSSH sees it from outside: ssh-keyscan, then ssh-keygen -l. */
function scannedFingerprint(port: number): string {
  const keys = execFileSync('ssh-keyscan', ['-p', String(port), '-t', 'ed25519', '127.0.0.1'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const line = execFileSync('ssh-keygen', ['-l', '-f', '-'], { input: keys, encoding: 'utf8' });
  return /(SHA256:\S+)/.exec(line)![1]!;
}

function listeningLog(stdout: string): { port: number; fingerprint: string } | undefined {
  for (const line of stdout.split('\n')) {
    if (!line.startsWith('{')) continue;
    const entry = JSON.parse(line) as { msg?: string; port?: number; fingerprint?: string };
    if (entry.msg === 'sftp is listening') return { port: entry.port!, fingerprint: entry.fingerprint! };
  }
  return undefined;
}

/** `quetzal serve` runs the SFTP server beside the API (docs/reference/files-and-sftp.md, docs/reference/configuration.md's SFTP_PORT and SFTP_HOST). */
describeEachDialect('quetzal serve: SFTP', (dialect) => {
  const box = useSandbox(dialect);

  it(
    'answers on SFTP_PORT with a host key made once, names that address in sftp_details, and is off with SFTP_PORT=0',
    async () => {
      const port = await freePort();
      const env = { ...box.env, SFTP_PORT: String(port), SFTP_HOST: '127.0.0.1', SCHEDULER: 'off' };
      const first = await startService('serve', env);
      let fingerprint: string;
      try {
        const token = /Authorization: Bearer (ptlc_[A-Za-z0-9]{43})/.exec(first.stdout())![1]!;
        const logged = listeningLog(first.stdout());
        expect(logged?.port).toBe(port);
        fingerprint = logged!.fingerprint;
        expect(scannedFingerprint(port)).toBe(fingerprint);
        expect(fs.statSync(path.join(box.dataDir, HOST_KEY_FILE)).mode & 0o777).toBe(0o600);

        const listing = await getJson(`${first.url}/api/client`, token);
        const demo = listing.body.data[0].attributes;
        expect(demo.sftp_details).toEqual({ ip: '127.0.0.1', port });

        // The first start's admin, given a password, signs in to the demo server.
        await box
          .db()
          .db.updateTable('users')
          .set({ password: await hashPassword('admin password 1') })
          .where('username', '=', 'admin')
          .execute();
        const result = await sftpBatch(port, `admin.${demo.identifier}`, 'admin password 1', ['mkdir over-sftp', 'ls'], {
          from: loopbackAddress(),
        });
        expect(result.code).toBe(0);
        expect(result.stdout).toMatch(/over-sftp/);
      } finally {
        expect(await first.stop('SIGTERM')).toBe(0);
      }

      // A restart keeps the key: clients that remembered it are not warned.
      const again = await startService('serve', env);
      try {
        expect(listeningLog(again.stdout())?.fingerprint).toBe(fingerprint);
        expect(scannedFingerprint(port)).toBe(fingerprint);
      } finally {
        expect(await again.stop('SIGTERM')).toBe(0);
      }

      const off = await startService('serve', { ...env, SFTP_PORT: '0' });
      try {
        expect(listeningLog(off.stdout())).toBeUndefined();
        const token = fs.readFileSync(path.join(box.dataDir, 'initial-api-key'), 'utf8').trim();
        const listing = await getJson(`${off.url}/api/client`, token);
        expect(listing.body.data[0].attributes.sftp_details).toEqual({ ip: '127.0.0.1', port: 0 });
      } finally {
        expect(await off.stop('SIGTERM')).toBe(0);
      }
    },
    SPAWN_TIMEOUT_MS,
  );
});

describeEachDatabase('sftp_details behind a wildcard SFTP_HOST', (database) => {
  const h = useHarness(database, { SFTP_HOST: '0.0.0.0', SFTP_PORT: '2222', APP_URL: 'https://panel.example.test:8443' });

  it('names APP_URL’s host, which clients can dial, rather than 0.0.0.0', async () => {
    const { owner, server } = await h.make.ownedServer();
    const res = await h.request(owner.token, { method: 'GET', url: `/api/client/servers/${server.uuid_short}` });
    expect(res.json().attributes.sftp_details).toEqual({ ip: 'panel.example.test', port: 2222 });
  });
});

it('generates the host key once, 0600, and reuses it; a leftover temporary file is ignored', () => {
  const dataDir = fs.mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'quetzal-hostkey-'));
  // What a SIGKILL while writing leaves: a half key beside the real name, never under it.
  fs.writeFileSync(path.join(dataDir, `${HOST_KEY_FILE}.1234.abcd.tmp`), '-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn');
  const first = loadHostKey(dataDir);
  expect(first.fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
  expect(fs.statSync(path.join(dataDir, HOST_KEY_FILE)).mode & 0o777).toBe(0o600);
  expect(loadHostKey(dataDir)).toEqual(first);
  // A key someone loosened is tightened again.
  fs.chmodSync(path.join(dataDir, HOST_KEY_FILE), 0o644);
  expect(loadHostKey(dataDir).fingerprint).toBe(first.fingerprint);
  expect(fs.statSync(path.join(dataDir, HOST_KEY_FILE)).mode & 0o777).toBe(0o600);
  fs.rmSync(dataDir, { recursive: true, force: true });
});
