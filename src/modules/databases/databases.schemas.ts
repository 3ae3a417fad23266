import { Type, type Static } from '@sinclair/typebox';

/** Pterodactyl's StoreDatabaseRequest: alpha_dash 3..48, and a remote of digits, dots and `%`. */
export const CreateDatabaseBody = Type.Object({
  database: Type.String({ minLength: 3, maxLength: 48, pattern: '^[A-Za-z0-9_-]+$' }),
  remote: Type.String({ minLength: 1, maxLength: 253, pattern: '^[0-9.%]+$' }),
});

export type CreateDatabaseInput = Static<typeof CreateDatabaseBody>;

export const DatabaseListQuery = Type.Object({ include: Type.Optional(Type.String()) });
