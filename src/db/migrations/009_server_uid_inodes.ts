import type { Kysely } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * Per-server uids and inode limits (docs/reference/containment.md, issue 18).
 *
 * `uid_slot`: which uid of SERVER_UID_RANGE the server's processes run as
 * (first + slot), unique across every instance sharing the database, so that
 * no two servers share per-user kernel limits (inotify instances, process
 * counts) or can reach each other's files. A slot, not the uid itself, so
 * that the range stays configuration. Existing servers get slots 0, 1, 2...
 * in id order; their volumes (owned by SERVER_UID until now) are given to
 * their new uid at their next start.
 *
 * `inodes`: the inode limit; null = the default (one per 4 KiB of the disk
 * limit), 0 = unlimited.
 */
export function serverUidInodesMigration(_dialect: DialectName) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('servers').addColumn('uid_slot', 'integer').execute();
      await db.schema.alterTable('servers').addColumn('inodes', 'integer').execute();
      const rows = await db.selectFrom('servers').select('id').orderBy('id').execute();
      for (const [slot, row] of rows.entries()) {
        await db.updateTable('servers').set({ uid_slot: slot }).where('id', '=', row.id).execute();
      }
      await db.schema.createIndex('servers_uid_slot_unique').unique().on('servers').column('uid_slot').execute();
    },
  };
}
