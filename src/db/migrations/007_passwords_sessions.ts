import type { Kysely } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * Sign-in for people (docs/reference/web-console.md): a password per user (null: cannot sign in),
 * the sessions a sign-in opens, and the sign-in attempts the throttle counts.
 * A session's id is the SHA-256 of the token in the cookie, never the token:
 * whoever reads the table cannot act as its users.
 */
export function passwordsSessionsMigration(dialect: DialectName) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('users').addColumn('password', 'text').execute();

      await db.schema
        .createTable('sessions')
        .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('csrf_token', 'varchar(64)', (c) => c.notNull())
        .addColumn('ip', 'varchar(64)')
        .addColumn('user_agent', 'varchar(255)')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('sessions_user_id_index').on('sessions').column('user_id').execute();

      const attempts = db.schema.createTable('login_attempts');
      await (
        dialect === 'sqlite'
          ? attempts.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
          : attempts.addColumn('id', 'bigserial', (c) => c.primaryKey())
      )
        .addColumn('bucket', 'varchar(80)', (c) => c.notNull())
        .addColumn('attempted_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('login_attempts_bucket_index')
        .on('login_attempts')
        .columns(['bucket', 'attempted_at'])
        .execute();
      await db.schema.createIndex('login_attempts_attempted_at_index').on('login_attempts').column('attempted_at').execute();
    },
  };
}
