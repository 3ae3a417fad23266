import { spawn } from 'node:child_process';
import { scryptSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CliError, type CliContext, type CliOptions } from '../../src/cli/command.js';
import { command as userCreate } from '../../src/cli/commands/user-create.js';
import { command as userPassword } from '../../src/cli/commands/user-password.js';
import { loadConfig } from '../../src/config.js';
import { hashPassword, parsePasswordHashCost, passwordProblem, verifyPassword } from '../../src/modules/users/passwords.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import { browserRequest, signIn } from '../helpers/sign-in.js';
import { BIN, describeEachDialect, useSandbox } from './helpers.js';

describe('password hashing', () => {
  it('stores scrypt with its parameters and a fresh salt, and verifies', async () => {
    const hash = await hashPassword('correct horse battery');
    const n = 2 ** (parsePasswordHashCost(process.env.PASSWORD_HASH_COST) ?? 0);
    expect(hash).toMatch(new RegExp(`^scrypt\\$${n}\\$8\\$1\\$[A-Za-z0-9+/]{22}==\\$[A-Za-z0-9+/]{43}=$`));
    expect(await hashPassword('correct horse battery')).not.toBe(hash);
    expect(await verifyPassword('correct horse battery', hash)).toBe(true);
    expect(await verifyPassword('correct horse batterY', hash)).toBe(false);
    expect(await verifyPassword('', hash)).toBe(false);
    // Unicode is compared in one normal form: é typed precomposed or combined is the same password.
    expect(await verifyPassword('caf\u0065\u0301 au lait', await hashPassword('caf\u00e9 au lait'))).toBe(true);
  });

  it('takes N from PASSWORD_HASH_COST: 2^15 unless set, 10 to 20, and the service refuses anything else', () => {
    expect(parsePasswordHashCost(undefined)).toBe(15);
    expect(parsePasswordHashCost('')).toBe(15);
    expect(parsePasswordHashCost('12')).toBe(12);
    for (const bad of ['9', '21', 'x', '-1', '1e1']) {
      expect(parsePasswordHashCost(bad)).toBeNull();
      expect(() => loadConfig({ DATA_DIR: '/nonexistent', PASSWORD_HASH_COST: bad })).toThrow(/PASSWORD_HASH_COST must be/);
    }
    expect(loadConfig({ DATA_DIR: '/nonexistent' }).passwordHashCost).toBe(15);
  });

  it('reads the parameters from the stored hash', async () => {
    const salt = Buffer.from('0123456789abcdef');
    const key = scryptSync('older password', salt, 32, { N: 2 ** 14, r: 8, p: 1 });
    const stored = `scrypt$16384$8$1$${salt.toString('base64')}$${key.toString('base64')}`;
    expect(await verifyPassword('older password', stored)).toBe(true);
    expect(await verifyPassword('older passwore', stored)).toBe(false);
  });

  it('treats a malformed or unreasonable hash as no password', async () => {
    const good = await hashPassword('some password');
    const [, , r, p, salt, key] = good.split('$');
    for (const stored of [
      '',
      'plain',
      `bcrypt$32768$${r}$${p}$${salt}$${key}`,
      `scrypt$3000$${r}$${p}$${salt}$${key}`,
      `scrypt$${2 ** 22}$${r}$${p}$${salt}$${key}`,
      `scrypt$32768$${r}$${p}$$${key}`,
    ]) {
      expect(await verifyPassword('some password', stored), stored).toBe(false);
    }
  });

  it('spends the same work on a user without a password (or no user) as on a real check', async () => {
    const hash = await hashPassword('correct horse battery');
    const time = async (stored: string | null) => {
      const start = performance.now();
      for (let i = 0; i < 4; i++) await verifyPassword('a guess at it', stored);
      return performance.now() - start;
    };
    await time(null);
    const real = await time(hash);
    const none = await time(null);
    expect(none).toBeGreaterThan(real * 0.4);
    expect(none).toBeLessThan(real * 2.5);
  });

  it('applies the rules: at least 8 characters, at most 1024 bytes', () => {
    expect(passwordProblem('1234567')).toBe('at least 8 characters');
    expect(passwordProblem('ééééééé')).toBe('at least 8 characters');
    expect(passwordProblem('12345678')).toBeNull();
    expect(passwordProblem('x'.repeat(1024))).toBeNull();
    expect(passwordProblem('x'.repeat(1025))).toBe('at most 1024 bytes');
    expect(passwordProblem('é'.repeat(513))).toBe('at most 1024 bytes');
  });
});

describeEachDatabase('password commands', (database) => {
  const h = useHarness(database);
  let n = 0;
  const fresh = (prefix: string) => `${prefix}${Date.now().toString(36)}${++n}`;
  const run = (
    command: { run(ctx: CliContext, options: CliOptions): Promise<Record<string, unknown>> },
    options: CliOptions,
    line: string,
  ) => {
    const ctx: CliContext = {
      config: h.config,
      database: h.db,
      daemon: h.daemon,
      clock: h.clock,
      readStdinLine: async () => line,
    };
    return command.run(ctx, options);
  };
  const storedHash = async (username: string) =>
    (await h.db.db.selectFrom('users').select('password').where('username', '=', username).executeTakeFirstOrThrow()).password;

  it('user:create --password-stdin sets the password read from standard input; without it there is none', async () => {
    const name = fresh('pw');
    const created = await run(
      userCreate,
      { username: name, email: `${name}@example.com`, 'password-stdin': true },
      ' spaced secret ',
    );
    expect(created).toEqual({ uuid: expect.any(String), username: name, email: `${name}@example.com`, root_admin: false });
    expect(await verifyPassword(' spaced secret ', await storedHash(name))).toBe(true);
    await signIn(h, name, ' spaced secret ');

    const plain = fresh('np');
    await run(userCreate, { username: plain, email: `${plain}@example.com` }, 'never read');
    expect(await storedHash(plain)).toBeNull();
  });

  it('user:create refuses a bad password and creates no user', async () => {
    for (const line of ['', 'short', 'x'.repeat(1025)]) {
      const name = fresh('bad');
      await expect(
        run(userCreate, { username: name, email: `${name}@example.com`, 'password-stdin': true }, line),
      ).rejects.toThrow(/the password on standard input must be at (least 8 characters|most 1024 bytes)/);
      expect(await h.db.db.selectFrom('users').select('id').where('username', '=', name).execute()).toEqual([]);
    }
  });

  it('user:password sets the password and ends every session of the user, and no one else’s', async () => {
    const name = fresh('chg');
    await run(userCreate, { username: name, email: `${name}@example.com`, 'password-stdin': true }, 'first password');
    const first = await signIn(h, name, 'first password');
    const second = await signIn(h, `${name}@example.com`, 'first password');
    const other = fresh('oth');
    await run(userCreate, { username: other, email: `${other}@example.com`, 'password-stdin': true }, 'other password');
    const bystander = await signIn(h, other, 'other password');

    expect(await run(userPassword, { user: `${name}@example.com` }, 'second password')).toEqual({
      uuid: expect.any(String),
      username: name,
    });
    for (const session of [first, second]) {
      expect((await browserRequest(h, session, { method: 'GET', url: '/auth/session' })).statusCode).toBe(401);
    }
    expect((await browserRequest(h, bystander, { method: 'GET', url: '/auth/session' })).statusCode).toBe(200);
    await expect(signIn(h, name, 'first password')).rejects.toThrow(/422/);
    await signIn(h, name, 'second password');

    await expect(run(userPassword, { user: name }, 'tiny')).rejects.toThrow(CliError);
    await expect(run(userPassword, { user: 'no_such_user' }, 'long enough')).rejects.toThrow(/No user matches/);
    await expect(run(userPassword, {}, 'long enough')).rejects.toThrow(/--user is required/);
  });
});

/** This process's environment without the service's variables: the child sees only the sandbox's. */
function inherited(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of [
    'DATABASE_URL',
    'DATA_DIR',
    'APP_URL',
    'APP_KEY',
    'PORT',
    'HOST',
    'LOG_LEVEL',
    'QUETZAL_BOOTSTRAP',
    'SCHEDULER',
  ])
    delete env[name];
  return env;
}

/** Runs the real binary with `input` on its standard input. */
function quetzalWithInput(
  args: string[],
  env: Record<string, string>,
  input: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: env.DATA_DIR, env: { ...inherited(), ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

describeEachDialect('password commands, real binary', (dialect) => {
  const box = useSandbox(dialect);

  it('reads one line from standard input for user:create --password-stdin and user:password', async () => {
    const created = await quetzalWithInput(
      ['user:create', '--username', 'carol', '--email', 'carol@example.com', '--password-stdin', '--json'],
      box.env,
      'first secret\nignored second line\n',
    );
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout)).toEqual({
      uuid: expect.any(String),
      username: 'carol',
      email: 'carol@example.com',
      root_admin: false,
    });
    const row = async () =>
      box.db().db.selectFrom('users').select('password').where('username', '=', 'carol').executeTakeFirstOrThrow();
    expect(await verifyPassword('first secret', (await row()).password)).toBe(true);

    const changed = await quetzalWithInput(['user:password', '--user', 'carol', '--json'], box.env, 'second secret\r\n');
    expect(changed.code, changed.stderr).toBe(0);
    expect(JSON.parse(changed.stdout)).toEqual({ uuid: JSON.parse(created.stdout).uuid, username: 'carol' });
    expect(await verifyPassword('second secret', (await row()).password)).toBe(true);

    // Without a final newline, and refused when too short: nothing on standard output, one line on standard error.
    const refused = await quetzalWithInput(['user:password', '--user', 'carol', '--json'], box.env, 'short');
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr).toBe('quetzal: the password on standard input must be at least 8 characters\n');
    expect(await verifyPassword('second secret', (await row()).password)).toBe(true);
  });
});
