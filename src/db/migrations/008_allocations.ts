import type { Kysely } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * Allocations (docs/reference/network-and-allocations.md, Pterodactyl's `allocations` table): an address and port
 * of this machine that players reach one server on. A row with `server_id` null
 * is free. A server names its primary one (`servers.allocation_id`, what
 * SERVER_IP and SERVER_PORT come from) and how many its users may hold
 * (`allocation_limit`, default 0 as `server:create` documents).
 *
 * Deleting a server frees its allocations (set null); the primary's reference
 * is set null if its allocation goes, which the admin command line refuses
 * while a server holds it.
 */
export function allocationsMigration(dialect: DialectName) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      const table = db.schema.createTable('allocations');
      await (
        dialect === 'sqlite'
          ? table.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
          : table.addColumn('id', 'serial', (c) => c.primaryKey())
      )
        // An IPv4 or IPv6 address in its canonical text form; 45 characters hold any.
        .addColumn('ip', 'varchar(45)', (c) => c.notNull())
        .addColumn('ip_alias', 'varchar(191)')
        .addColumn('port', 'integer', (c) => c.notNull())
        .addColumn('server_id', 'integer', (c) => c.references('servers.id').onDelete('set null'))
        .addColumn('notes', 'varchar(256)')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addUniqueConstraint('allocations_ip_port_unique', ['ip', 'port'])
        .execute();
      await db.schema.createIndex('allocations_server_id_index').on('allocations').column('server_id').execute();

      await db.schema
        .alterTable('servers')
        .addColumn('allocation_id', 'integer', (c) => c.references('allocations.id').onDelete('set null'))
        .execute();
      await db.schema
        .alterTable('servers')
        .addColumn('allocation_limit', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
    },
  };
}
