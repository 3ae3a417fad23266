import { CliError, requireOption, type CliCommand } from '../command.js';
import { createUser, findTakenUserField } from '../../modules/users/users.repository.js';
import { hashPassword } from '../../modules/users/passwords.js';
import { characters, readNewPassword } from './lookups.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// The WHATWG (HTML) definition of a valid e-mail address: what browsers and Laravel accept in practice.
const EMAIL =
  /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** Why `username` cannot be one, or null. It must not be mistakable for an email or a UUID, which USER also accepts. */
export function usernameProblem(username: string): string | null {
  if (characters(username) > 191) return 'at most 191 characters';
  if (/[\s\p{C}]/u.test(username)) return 'no spaces or control characters';
  if (username.includes('@')) return 'no "@" (that would read as an email)';
  if (UUID.test(username)) return 'not a UUID';
  return null;
}

export function isEmail(email: string): boolean {
  return characters(email) <= 191 && EMAIL.test(email);
}

/** `user:create --username U --email E [--admin] [--password-stdin]` (docs/reference/cli.md). */
export const command: CliCommand = {
  name: 'user:create',
  usage: '--username U --email E [--admin] [--password-stdin]',
  valueOptions: ['username', 'email'],
  flagOptions: ['admin', 'password-stdin'],
  async run(ctx, options) {
    const username = requireOption(options, 'username');
    const email = requireOption(options, 'email');
    const problem = usernameProblem(username);
    if (problem) throw new CliError(`--username must be ${problem}: "${username}"`);
    if (!isEmail(email)) throw new CliError(`--email is not a valid email address: "${email}"`);
    const rootAdmin = options.admin === true;
    const db = ctx.database.db;
    // Read and hashed before anything is written: a refused password creates no user.
    const passwordHash = options['password-stdin'] === true ? await hashPassword(await readNewPassword(ctx)) : null;

    const taken = async () => {
      const field = await findTakenUserField(db, username, email);
      return field && new CliError(`A user with ${field} "${field === 'username' ? username : email}" already exists.`);
    };
    const conflict = await taken();
    if (conflict) throw conflict;
    let user;
    try {
      user = await createUser(db, { username, email, rootAdmin, passwordHash, now: ctx.clock.now() });
    } catch (err) {
      // Created by someone else between the check and the insert.
      throw (await taken()) ?? err;
    }
    return { uuid: user.uuid, username: user.username, email: user.email, root_admin: user.root_admin === 1 };
  },
};
