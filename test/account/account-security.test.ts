import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness, type Harness } from '../helpers/harness.js';
import { browserRequest, freshIp, login, signIn, userWithPassword } from '../helpers/sign-in.js';
import { scratchDir } from '../helpers/scratch.js';

/** A DSA public key (made once with ssh-keygen -t dsa: newer OpenSSH builds no longer make them). */
const DSA_KEY =
  'ssh-dss AAAAB3NzaC1kc3MAAACBAMmdRx4vWAYN1wcdcEP0+hTvkknZtzThWzzIGuEWIk66uHMzvA13Kf2sxiMn6QbrwY+Ag/NC/flDgNpjGakh41MBouWsmcrfFIJWWAwZxiyjGYg+gt0iZfB6DHTjInAZVsI/ojbDGMhObc2ycg3SaUsKOBn3u52+EyOn2sxIbO01AAAAFQDw8kfqM6MCMBmL0YkRv1oZP0wmFwAAAH9ZItLvP7XzVfSFMOcy4y4SHCww7cnFSJT8FwtAGp9AEivsh2Yw9McOet660Z5qNwirtazsyKrjL4xlVkXvefwyQBMm89J0QPgck2u9XxgC77xGg5VcnGjFqdtoPUkLNjdq1AsGrvMfjJuYpclgf9e9Dqe0U0F0My6Dg13XoqA6AAAAgENktw9nHpBvOnGCEfCcuscwrkk/2m8bA76yHx/FS+TiL795enw5u0rNoL/iLZuj9b3aTBxyW6rsBKopScNwu+RcDqGymY3FFwiemBwZLiBZMqQwVvArCergj4dhofGxz8mNFW1l0L9/gqHyLIVLLhrkeOkO5wwsTrc3aTRFv4wi';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/;

/** A fresh OpenSSH key pair made by ssh-keygen: the public key line and its fingerprint as ssh-keygen prints it. */
export function makeKey(type: 'ed25519' | 'rsa' | 'ecdsa' | 'dsa', bits?: number) {
  const dir = scratchDir('quetzal-key-');
  const file = path.join(dir, 'id');
  execFileSync('ssh-keygen', ['-q', '-t', type, ...(bits ? ['-b', String(bits)] : []), '-N', '', '-C', 'test', '-f', file]);
  const fingerprint = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', `${file}.pub`])
    .toString()
    .split(' ')[1]!;
  return { file, publicKey: fs.readFileSync(`${file}.pub`, 'utf8').trim(), fingerprint };
}

async function events(h: Harness, token: string, query = '') {
  const res = await h.request(token, { method: 'GET', url: `/api/client/account/activity${query}` });
  expect(res.statusCode).toBe(200);
  return res.json() as {
    data: {
      object: string;
      attributes: { event: string; ip: string; is_api: boolean; properties: Record<string, unknown>; timestamp: string };
    }[];
    meta: { pagination: { total: number; per_page: number } };
  };
}

/** docs/reference/accounts.md: the account's email, its own activity, and its SSH keys. */
describeEachDatabase('account security', (database) => {
  const h = useHarness(database);

  it('PUT /account/email: a wrong password is a 400, the email is checked (422), then changed and logged', async () => {
    const { user, token, password } = await userWithPassword(h);
    const other = await h.make.user();
    const put = (payload: object) => h.request(token, { method: 'PUT', url: '/api/client/account/email', payload });

    const wrong = await put({ email: 'new@example.com', password: 'not it' });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json()).toEqual({
      errors: [{ code: 'DisplayException', status: '400', detail: 'The password provided was invalid for this account.' }],
    });
    for (const [email, detail] of [
      ['not an email', 'The email field must be a valid email address.'],
      [other.user.email.toUpperCase(), 'The email has already been taken.'],
      ['', 'The email field is required.'],
    ] as const) {
      const res = await put({ email, password });
      expect(res.statusCode).toBe(422);
      expect(res.json().errors[0]).toMatchObject({
        code: expect.any(String),
        status: '422',
        detail,
        meta: expect.objectContaining({ source_field: 'email' }),
      });
    }
    const email = `${user.username}-new@example.com`;
    expect((await put({ email, password })).statusCode).toBe(204);
    expect((await h.request(token, { method: 'GET', url: '/api/client/account' })).json().attributes.email).toBe(email);
    const logged = await events(h, token);
    expect(logged.data[0]!.attributes).toMatchObject({
      event: 'user:account.email-changed',
      is_api: true,
      properties: { old: user.email, new: email },
    });
    expect(logged.data.filter((e) => e.attributes.event === 'user:account.email-changed')).toHaveLength(1);
  });

  it('GET /account/activity: sign-ins, failures, keys and password changes, newest first, filtered and sorted', async () => {
    const { user, password } = await userWithPassword(h);
    const ip = freshIp();
    expect((await login(h, { user: user.username, password: 'wrong one' }, ip)).statusCode).toBe(422);
    const session = await signIn(h, user.username, password, ip);
    const created = await browserRequest(h, session, {
      method: 'POST',
      url: '/api/client/account/api-keys',
      payload: { description: 'logged' },
      csrf: session.csrf,
    });
    expect(created.statusCode).toBe(200);
    const identifier = created.json().attributes.identifier as string;
    const key2 = await browserRequest(h, session, {
      method: 'POST',
      url: '/api/client/account/api-keys',
      payload: { description: 'second' },
      csrf: session.csrf,
    });
    const token2 = key2.json().meta.secret_token as string;
    expect(
      (
        await browserRequest(h, session, {
          method: 'DELETE',
          url: `/api/client/account/api-keys/${identifier}`,
          csrf: session.csrf,
        })
      ).statusCode,
    ).toBe(204);
    expect(
      (
        await browserRequest(h, session, {
          method: 'PUT',
          url: '/api/client/account/password',
          payload: { current_password: password, password: 'another password 1', password_confirmation: 'another password 1' },
          csrf: session.csrf,
        })
      ).statusCode,
    ).toBe(204);

    const all = await events(h, token2);
    expect(all.data.map((e) => e.attributes.event)).toEqual([
      'user:account.password-changed',
      'user:api-key.delete',
      'user:api-key.create',
      'user:api-key.create',
      'auth:success',
      'auth:fail',
    ]);
    const first = all.data[0]!;
    expect(first.object).toBe('activity_log');
    expect(first.attributes.ip).toBe('127.0.0.1');
    expect(all.data[4]!.attributes.ip).toBe(ip);
    expect(all.data[5]!.attributes.ip).toBe(ip);
    expect(first.attributes.is_api).toBe(false);
    expect(first.attributes.timestamp).toMatch(ISO);
    expect(all.data[1]!.attributes.properties).toEqual({ identifier });
    expect(all.data.map((e) => (e.attributes as { has_additional_metadata?: boolean }).has_additional_metadata)).toEqual(
      Array(6).fill(false),
    );
    expect(all.meta.pagination).toMatchObject({ total: 6, per_page: 25 });

    const oldest = await events(h, token2, '?sort=timestamp&per_page=2');
    expect(oldest.data.map((e) => e.attributes.event)).toEqual(['auth:fail', 'auth:success']);
    expect(oldest.meta.pagination.total).toBe(6);
    const filtered = await events(h, token2, '?filter[event]=API-KEY');
    expect(filtered.data.map((e) => e.attributes.event)).toEqual([
      'user:api-key.delete',
      'user:api-key.create',
      'user:api-key.create',
    ]);
    const badFilter = await h.request(token2, { method: 'GET', url: '/api/client/account/activity?filter[ip]=1' });
    expect(badFilter.statusCode).toBe(400);
    expect((await h.request(token2, { method: 'GET', url: '/api/client/account/activity?sort=id' })).statusCode).toBe(400);
    expect((await h.request(token2, { method: 'GET', url: '/api/client/account/activity?per_page=101' })).statusCode).toBe(422);
    // Another account sees none of it.
    const stranger = await h.make.user();
    expect((await events(h, stranger.token)).data).toEqual([]);
  });

  it('SSH keys: added with their SHA256 fingerprint, listed, refused when DSA, short RSA, invalid or duplicate, removed', async () => {
    const { token } = await userWithPassword(h);
    const ed = makeKey('ed25519');
    const add = (payload: object) => h.request(token, { method: 'POST', url: '/api/client/account/ssh-keys', payload });
    const created = await add({ name: 'laptop', public_key: ed.publicKey });
    expect(created.statusCode).toBe(200);
    expect(created.json()).toEqual({
      object: 'ssh_key',
      attributes: {
        name: 'laptop',
        fingerprint: ed.fingerprint,
        public_key: ed.publicKey.split(' ').slice(0, 2).join(' '),
        created_at: expect.stringMatching(ISO),
      },
    });
    expect(ed.fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    const rsa = makeKey('rsa', 3072);
    expect((await add({ name: 'rsa', public_key: rsa.publicKey })).statusCode).toBe(200);

    const refused = async (payload: object, detail: string) => {
      const res = await add(payload);
      expect(res.statusCode).toBe(422);
      expect(res.json().errors).toContainEqual(
        expect.objectContaining({ detail, meta: expect.objectContaining({ source_field: 'public_key' }) }),
      );
    };
    await refused({ name: 'again', public_key: ed.publicKey }, 'The public key provided already exists on your account.');
    await refused(
      { name: 'short', public_key: makeKey('rsa', 1024).publicKey },
      'RSA keys must be at least 2048 bytes in length.',
    );
    await refused({ name: 'junk', public_key: 'ssh-ed25519 AAAAnotakey' }, 'The public key provided is not valid.');
    await refused({ name: 'dsa', public_key: DSA_KEY }, 'DSA keys are not supported.');
    const noName = await add({ public_key: makeKey('ecdsa').publicKey });
    expect(noName.statusCode).toBe(422);
    expect(noName.json().errors[0].meta.source_field).toBe('name');

    const listed = await h.request(token, { method: 'GET', url: '/api/client/account/ssh-keys' });
    expect(listed.json().object).toBe('list');
    expect(listed.json().data.map((k: { attributes: { name: string } }) => k.attributes.name)).toEqual(['laptop', 'rsa']);
    // Another account may add the same key and sees only its own.
    const other = await h.make.user();
    expect((await h.request(other.token, { method: 'GET', url: '/api/client/account/ssh-keys' })).json().data).toEqual([]);

    const remove = (fingerprint: unknown) =>
      h.request(token, { method: 'POST', url: '/api/client/account/ssh-keys/remove', payload: { fingerprint } });
    expect((await remove(ed.fingerprint)).statusCode).toBe(204);
    expect((await remove(ed.fingerprint)).statusCode).toBe(204);
    expect((await remove(undefined)).statusCode).toBe(422);
    const after = await h.request(token, { method: 'GET', url: '/api/client/account/ssh-keys' });
    expect(after.json().data.map((k: { attributes: { name: string } }) => k.attributes.name)).toEqual(['rsa']);
    const logged = await events(h, token, '?filter[event]=ssh-key');
    expect(logged.data.map((e) => [e.attributes.event, e.attributes.properties.fingerprint])).toEqual([
      ['user:ssh-key.delete', ed.fingerprint],
      ['user:ssh-key.create', rsa.fingerprint],
      ['user:ssh-key.create', ed.fingerprint],
    ]);
  });
});
