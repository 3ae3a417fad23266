import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { generateSync } from 'otplib';
import { afterEach, expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness, type Harness } from '../helpers/harness.js';
import { userWithPassword } from '../helpers/sign-in.js';
import { scratchDir } from '../helpers/scratch.js';

/**
 * An account change and its `user_activity` entry commit together (docs/reference/accounts.md):
 * a trigger makes the entry's insert fail; the change must not be there
 * afterwards, and the answer is the generic 500.
 */
describeEachDatabase('account changes and their activity commit together', (database) => {
  const h = useHarness(database);

  async function failActivityInserts(harness: Harness) {
    const db = harness.db.db;
    if (harness.db.dialect === 'sqlite') {
      await sql
        .raw(
          `CREATE TRIGGER fail_account_activity BEFORE INSERT ON user_activity BEGIN SELECT RAISE(ABORT, 'injected failure'); END`,
        )
        .execute(db);
      return () => sql.raw('DROP TRIGGER fail_account_activity').execute(db);
    }
    await sql
      .raw(
        `CREATE OR REPLACE FUNCTION fail_account_activity() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$ LANGUAGE plpgsql`,
      )
      .execute(db);
    await sql
      .raw(
        `CREATE TRIGGER fail_account_activity BEFORE INSERT ON user_activity FOR EACH ROW EXECUTE FUNCTION fail_account_activity()`,
      )
      .execute(db);
    return () => sql.raw('DROP TRIGGER fail_account_activity ON user_activity').execute(db);
  }

  let remove: (() => Promise<unknown>) | undefined;
  afterEach(async () => {
    await remove?.();
    remove = undefined;
  });

  const failed = (res: { statusCode: number; body: string }) => {
    expect(res.statusCode).toBe(500);
    expect(res.body).not.toMatch(/injected|trigger/i);
  };

  it('email, SSH key, API key and two-factor changes are undone when their entry cannot be written', async () => {
    const { user, token, password } = await userWithPassword(h);
    const { secret } = (await h.request(token, { method: 'GET', url: '/api/client/account/two-factor' })).json().data as {
      secret: string;
    };
    const dir = scratchDir('quetzal-key-');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', path.join(dir, 'key')]);
    const publicKey = fs.readFileSync(path.join(dir, 'key.pub'), 'utf8').trim();
    remove = await failActivityInserts(h);

    failed(
      await h.request(token, {
        method: 'PUT',
        url: '/api/client/account/email',
        payload: { email: 'moved@example.com', password },
      }),
    );
    failed(
      await h.request(token, {
        method: 'POST',
        url: '/api/client/account/ssh-keys',
        payload: { name: 'k', public_key: publicKey },
      }),
    );
    failed(await h.request(token, { method: 'POST', url: '/api/client/account/api-keys', payload: { description: 'x' } }));
    const code = generateSync({ secret, epoch: Math.floor(h.clock.now() / 1000) });
    failed(await h.request(token, { method: 'POST', url: '/api/client/account/two-factor', payload: { code, password } }));

    const row = await h.db.db
      .selectFrom('users')
      .select(['email', 'use_totp', 'totp_last_step'])
      .where('id', '=', user.id)
      .executeTakeFirstOrThrow();
    expect(row.email).toBe(user.email);
    expect(Number(row.use_totp)).toBe(0);
    expect(row.totp_last_step).toBeNull();
    expect(await h.db.db.selectFrom('user_ssh_keys').select('id').where('user_id', '=', user.id).execute()).toEqual([]);
    expect(await h.db.db.selectFrom('recovery_tokens').select('id').where('user_id', '=', user.id).execute()).toEqual([]);
    const keys = await h.db.db
      .selectFrom('api_keys')
      .select('id')
      .where('user_id', '=', user.id)
      .where('revoked_at', 'is', null)
      .execute();
    expect(keys).toHaveLength(1); // the factory's own
  });
});
