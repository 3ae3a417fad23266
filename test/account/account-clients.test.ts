import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { generateSync } from 'otplib';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Client as JsPteroClient } from 'jspteroapi';
import jsPteroAccount from 'jspteroapi/dist/client/methods/account.js';
import { PteroClient } from '@devnote-dev/pterojs';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness, type Harness } from '../helpers/harness.js';
import { userWithPassword } from '../helpers/sign-in.js';
import { scratchDir } from '../helpers/scratch.js';

/** Turns two-factor on through the API (both libraries' enable2FA send no password, which Pterodactyl 1.10+ requires). */
async function enableTwoFactor(h: Harness, token: string, password: string) {
  const { secret } = (await h.request(token, { method: 'GET', url: '/api/client/account/two-factor' })).json().data as {
    secret: string;
  };
  const res = await h.request(token, {
    method: 'POST',
    url: '/api/client/account/two-factor',
    payload: { code: generateSync({ secret, epoch: Math.floor(h.clock.now() / 1000) }), password },
  });
  expect(res.statusCode).toBe(200);
  h.clock.advance(30_000);
}

const useTotp = async (h: Harness, userId: number) =>
  Number((await h.db.db.selectFrom('users').select('use_totp').where('id', '=', userId).executeTakeFirstOrThrow()).use_totp);

/** The real npm clients' account methods (docs/reference/accounts.md), unchanged, over real HTTP. */
describeEachDatabase('existing clients: account security', (database) => {
  const h = useHarness(database);
  let baseUrl = '';
  beforeAll(async () => {
    baseUrl = await h.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await h.app.close();
  });

  it('jspteroapi: getAccount2FADetails, enable2FA (refused without a password, as Pterodactyl), disable2FA, updateEmail', async () => {
    const { user, token, password } = await userWithPassword(h);
    const client = new JsPteroClient(baseUrl, token, undefined, true);
    const account = new jsPteroAccount.accountMethods(client);
    const uri = await client.getAccount2FADetails();
    expect(uri).toMatch(/^otpauth:\/\/totp\/Quetzal:/);
    const secret = new URL(uri).searchParams.get('secret')!;
    await expect(client.enable2FA(generateSync({ secret, epoch: Math.floor(h.clock.now() / 1000) }))).rejects.toBeDefined();
    await enableTwoFactor(h, token, password);
    expect(await useTotp(h, user.id)).toBe(1);
    expect(await account.disable2FA(password)).toBe('Successfully disable 2FA!');
    expect(await useTotp(h, user.id)).toBe(0);
    expect(await client.updateEmail(`js-${user.id}@example.test`, password)).toBe('Successfully updated email!');
    expect((await client.getAccountInfo()).email).toBe(`js-${user.id}@example.test`);
  });

  it('PteroJS: get2FACode, disable2FA, updateEmail, fetchActivities, createSSHKey, fetchSSHKeys, removeSSHKey', async () => {
    const { user, token, password } = await userWithPassword(h);
    const client = new PteroClient(baseUrl, token, { fetchClient: false, servers: { fetch: false, cache: false } } as never);
    const account = client.account;
    expect(await account.get2FACode()).toMatch(/^otpauth:\/\/totp\//);
    await enableTwoFactor(h, token, password);
    await account.disable2FA(password);
    expect(await useTotp(h, user.id)).toBe(0);
    await account.updateEmail(`pjs-${user.id}@example.test`, password);

    const dir = scratchDir('quetzal-key-');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', path.join(dir, 'key')]);
    const publicKey = fs.readFileSync(path.join(dir, 'key.pub'), 'utf8').trim();
    const created = (await account.createSSHKey('laptop', publicKey)) as unknown as {
      name: string;
      fingerprint: string;
      createdAt: Date;
    };
    expect(created.name).toBe('laptop');
    expect(created.fingerprint).toMatch(/^SHA256:/);
    expect(created.createdAt.getTime()).not.toBeNaN();
    const keys = (await account.fetchSSHKeys()) as unknown as { fingerprint: string }[];
    expect(keys.map((k) => k.fingerprint)).toEqual([created.fingerprint]);
    await account.removeSSHKey(created.fingerprint);
    expect(await account.fetchSSHKeys()).toEqual([]);

    const activities = (await account.fetchActivities()) as unknown as { event: string; timestamp: Date }[];
    expect(activities.map((a) => a.event)).toEqual([
      'user:ssh-key.delete',
      'user:ssh-key.create',
      'user:account.email-changed',
      'user:two-factor.delete',
      'user:two-factor.create',
    ]);
    expect(activities[0]!.timestamp.getTime()).not.toBeNaN();
  });
});
