import type { Kysely } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * Account security and databases (docs/reference/accounts.md):
 *
 * - `users.totp_secret` (encrypted with the app key, src/secrets.ts; null
 *   until two-factor is set up), `users.totp_authenticated_at` (when it was
 *   turned on) and `users.totp_last_step` (the last 30 s step whose code was
 *   accepted: a code is good once, so a step at or before it is refused);
 * - `recovery_tokens`: the SHA-256 of each two-factor recovery token, deleted
 *   when used;
 * - `sign_in_checkpoints`: a password sign-in waiting for its second factor
 *   (`id` is the SHA-256 of the confirmation token), in the database so that
 *   any instance can complete it;
 * - `user_ssh_keys`: an account's public keys for SFTP (`fingerprint` is
 *   OpenSSH's `SHA256:...`);
 * - `user_activity`: an account's own events (sign-ins and failures, API
 *   keys, password, email, two-factor, SSH keys), apart from the servers'
 *   activity log;
 * - `database_hosts` (the admin's; `password` encrypted with the app key) and
 *   `server_databases` (a server's databases on them; `password` encrypted),
 *   and `servers.database_limit` (0: none may be created).
 */
export function accountsDatabasesMigration(dialect: DialectName) {
  const idColumn = <T extends { addColumn: (...args: any[]) => T }>(table: T): T =>
    dialect === 'sqlite'
      ? table.addColumn('id', 'integer', (c: any) => c.primaryKey().autoIncrement())
      : table.addColumn('id', 'serial', (c: any) => c.primaryKey());
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('users').addColumn('totp_secret', 'text').execute();
      await db.schema.alterTable('users').addColumn('totp_authenticated_at', 'bigint').execute();
      await db.schema.alterTable('users').addColumn('totp_last_step', 'bigint').execute();

      await idColumn(db.schema.createTable('recovery_tokens'))
        .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('token_hash', 'varchar(64)', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('recovery_tokens_user').on('recovery_tokens').columns(['user_id']).execute();

      await db.schema
        .createTable('sign_in_checkpoints')
        .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('ip', 'varchar(45)')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();

      await idColumn(db.schema.createTable('user_ssh_keys'))
        .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('name', 'varchar(191)', (c) => c.notNull())
        .addColumn('fingerprint', 'varchar(191)', (c) => c.notNull())
        .addColumn('public_key', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addUniqueConstraint('user_ssh_keys_user_fingerprint_unique', ['user_id', 'fingerprint'])
        .execute();

      await idColumn(db.schema.createTable('user_activity'))
        .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('event', 'varchar(191)', (c) => c.notNull())
        .addColumn('ip', 'varchar(45)')
        .addColumn('api_key_id', 'integer')
        .addColumn('properties', 'text', (c) => c.notNull().defaultTo('{}'))
        .addColumn('timestamp', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('user_activity_user_id').on('user_activity').columns(['user_id', 'id']).execute();

      await idColumn(db.schema.createTable('database_hosts'))
        .addColumn('name', 'varchar(191)', (c) => c.notNull().unique())
        .addColumn('engine', 'varchar(16)', (c) => c.notNull())
        .addColumn('host', 'varchar(191)', (c) => c.notNull())
        .addColumn('port', 'integer', (c) => c.notNull())
        .addColumn('username', 'varchar(191)', (c) => c.notNull())
        .addColumn('password', 'text', (c) => c.notNull())
        .addColumn('maintenance_db', 'varchar(191)')
        .addColumn('max_databases', 'integer')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();

      await idColumn(db.schema.createTable('server_databases'))
        .addColumn('server_id', 'integer', (c) => c.notNull().references('servers.id').onDelete('cascade'))
        .addColumn('database_host_id', 'integer', (c) => c.notNull().references('database_hosts.id'))
        .addColumn('database', 'varchar(191)', (c) => c.notNull())
        .addColumn('username', 'varchar(191)', (c) => c.notNull())
        .addColumn('remote', 'varchar(191)', (c) => c.notNull().defaultTo('%'))
        .addColumn('password', 'text', (c) => c.notNull())
        .addColumn('max_connections', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addUniqueConstraint('server_databases_host_database_unique', ['database_host_id', 'database'])
        .addUniqueConstraint('server_databases_host_username_unique', ['database_host_id', 'username'])
        .execute();
      await db.schema.createIndex('server_databases_server').on('server_databases').columns(['server_id']).execute();

      await db.schema
        .alterTable('servers')
        .addColumn('database_limit', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
    },
  };
}
