import type { Queryable } from '../../db/database.js';
import type { ServerRow, UserRow } from '../../db/schema.js';
import { findServerByReference } from '../../modules/servers/servers.repository.js';
import { findUserByReference } from '../../modules/users/users.repository.js';
import { CliError, type CliOptions } from '../command.js';

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
