import { sql, type Kysely, type SqlBool } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * The scheduler's durable state (docs/reference/schedules.md#running-schedules, docs/SCHEDULER.md). A run lives in the
 * schedule's row, not in a timer: who holds it and until when (claimed_by,
 * lease_expires_at), which claim it is (run_number, the fencing token every
 * progress write checks), how far it got (run_cursor: the sequence_id of the
 * last finished task; run_step_at: when that step finished, the base of the
 * next task's time_offset), and a manual execution waiting to be picked up
 * (run_requested_at).
 */
export function schedulerMigration(_dialect: DialectName) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      // SQLite adds one column per ALTER TABLE; PostgreSQL does not mind.
      await db.schema.alterTable('schedules').addColumn('run_requested_at', 'bigint').execute();
      await db.schema
        .alterTable('schedules')
        .addColumn('run_number', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable('schedules').addColumn('claimed_by', 'varchar(191)').execute();
      await db.schema.alterTable('schedules').addColumn('lease_expires_at', 'bigint').execute();
      await db.schema.alterTable('schedules').addColumn('run_cursor', 'integer').execute();
      await db.schema.alterTable('schedules').addColumn('run_step_at', 'bigint').execute();

      // The sleeper's one query and the claim's candidate scan read these partial
      // indexes. Their predicates are literals, and the queries spell them the same
      // way, so both databases can prove the index applies.
      await db.schema
        .createIndex('schedules_due_index')
        .on('schedules')
        .column('next_run_at')
        .where(sql<SqlBool>`is_active = 1 and is_processing = 0`)
        .execute();
      await db.schema
        .createIndex('schedules_run_requested_index')
        .on('schedules')
        .column('run_requested_at')
        .where(sql<SqlBool>`run_requested_at is not null`)
        .execute();
      await db.schema
        .createIndex('schedules_lease_index')
        .on('schedules')
        .column('lease_expires_at')
        .where(sql<SqlBool>`is_processing = 1`)
        .execute();
    },
  };
}
