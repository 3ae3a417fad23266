import type { Kysely } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * Who is doing what to a server's files (docs/reference/backups-and-restores.md#durability, docs/RESTORE.md "Crash
 * safety"). A restore in progress has a row in `backup_restores`, inserted
 * with the status `restoring_backup` and deleted with its return to null; a
 * backup being written names its owner. Both carry the owning instance's id
 * and a lease it renews, so that the next instance on that machine (at once)
 * or a live one elsewhere (once the lease ran out) can finish or undo them.
 */
export function fileOperationsMigration(_dialect: DialectName) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('backup_restores')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('server_id', 'integer', (c) => c.notNull().unique().references('servers.id').onDelete('cascade'))
        .addColumn('backup_id', 'integer', (c) => c.notNull())
        .addColumn('truncate', 'integer', (c) => c.notNull())
        .addColumn('owner', 'varchar(191)', (c) => c.notNull())
        .addColumn('lease_expires_at', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      // Backups begun before this migration have no owner: the next start treats them as abandoned.
      await db.schema.alterTable('backups').addColumn('owner', 'varchar(191)').execute();
      await db.schema.alterTable('backups').addColumn('lease_expires_at', 'bigint').execute();
      // Changes made to a volume by the panel itself (delete_files), so that a backup written
      // meanwhile is not recorded as successful (docs/RESTORE.md "One file operation per server").
      await db.schema
        .alterTable('servers')
        .addColumn('volume_changes', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable('servers')
        .addColumn('volume_changes_in_flight', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable('servers').addColumn('volume_change_lease_until', 'bigint').execute();
      await db.schema.alterTable('backups').addColumn('volume_changes_at_start', 'integer').execute();
    },
  };
}
