import type { Queryable } from '../../db/database.js';
import type { ServerRow, UserRow } from '../../db/schema.js';
import { findServerByReference } from '../../modules/servers/servers.repository.js';
import { passwordProblem } from '../../modules/users/passwords.js';
import { findUserByReference } from '../../modules/users/users.repository.js';
import { CliError, type CliContext, type CliOptions } from '../command.js';
import { readStdinLine } from '../stdin.js';

/** USER: a username, email or UUID. */
export async function requireUser(db: Queryable, reference: string): Promise<UserRow> {
  const user = await findUserByReference(db, reference);
  if (!user) throw new CliError(`No user matches "${reference}".`);
  return user;
}

/** S: a server UUID or 8-character short identifier. */
export async function requireServer(db: Queryable, reference: string): Promise<ServerRow> {
  const server = await findServerByReference(db, reference);
  if (!server) throw new CliError(`No server matches "${reference}".`);
  return server;
}

/** A value option that may be left out; given but blank is a mistake. */
export function optionalOption(options: CliOptions, name: string): string | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.trim() === '') throw new CliError(`--${name} needs a value`);
  return value.trim();
}

/** A comma-separated list option, trimmed, without empty entries or repeats. */
export function listOption(value: string): string[] {
  return [
    ...new Set(
      value
        .split(',')
        .map((entry) => entry.trim())
        .filter((entry) => entry !== ''),
    ),
  ];
}

/** Length in characters (code points), as the database's varchar(n) counts. */
export const characters = (value: string) => [...value].length;

/** A new password, one line of standard input: at least 8 characters, at most 1024 bytes, kept as typed (not trimmed). */
export async function readNewPassword(ctx: CliContext): Promise<string> {
  const password = await readStdinLine(ctx, 'New password: ');
  const problem = passwordProblem(password);
  if (problem) throw new CliError(`the password on standard input must be ${problem}`);
  return password;
}
