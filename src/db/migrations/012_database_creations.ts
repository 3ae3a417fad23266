import type { Kysely } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * `database_creations` (docs/DATABASES.md "Failures and crashes"): a server
 * database being created on its host, written and committed before the
 * host's CREATE runs and deleted in the transaction that writes its
 * `server_databases` row. Stamped with the creating instance and a lease, so
 * that what a dead instance left on a host (a database and user with no row)
 * is found and dropped by the recovery pass, not left for an operator.
 * Its `database` counts against the server's limit and name while it exists.
 */
export function databaseCreationsMigration(dialect: DialectName) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      const table = db.schema.createTable('database_creations');
      await (
        dialect === 'sqlite'
          ? table.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
          : table.addColumn('id', 'serial', (c) => c.primaryKey())
      )
        .addColumn('server_id', 'integer', (c) => c.notNull().references('servers.id').onDelete('cascade'))
        .addColumn('database_host_id', 'integer', (c) => c.notNull().references('database_hosts.id'))
        .addColumn('database', 'varchar(191)', (c) => c.notNull())
        .addColumn('username', 'varchar(191)', (c) => c.notNull())
        .addColumn('remote', 'varchar(191)', (c) => c.notNull())
        .addColumn('owner', 'varchar(255)', (c) => c.notNull())
        .addColumn('lease_expires_at', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addUniqueConstraint('database_creations_host_database_unique', ['database_host_id', 'database'])
        .execute();
      await db.schema.createIndex('database_creations_server').on('database_creations').columns(['server_id']).execute();
    },
    async down(db: Kysely<any>): Promise<void> {
      await db.schema.dropTable('database_creations').execute();
    },
  };
}
