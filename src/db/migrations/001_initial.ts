import { type CreateTableBuilder, type Kysely } from 'kysely';
import type { DialectName } from '../database.js';

/** `id` as an auto-incrementing primary key, spelled the way each database wants it. */
function withId<T extends string>(table: CreateTableBuilder<T, never>, dialect: DialectName, big = false) {
  return dialect === 'sqlite'
    ? table.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
    : table.addColumn('id', big ? 'bigserial' : 'serial', (c) => c.primaryKey());
}

export function initialMigration(dialect: DialectName) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await withId(db.schema.createTable('users'), dialect)
        .addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())
        .addColumn('username', 'varchar(191)', (c) => c.notNull().unique())
        .addColumn('email', 'varchar(191)', (c) => c.notNull().unique())
        .addColumn('root_admin', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('use_totp', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();

      await withId(db.schema.createTable('api_keys'), dialect)
        .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('identifier', 'varchar(16)', (c) => c.notNull().unique())
        .addColumn('token_hash', 'varchar(128)', (c) => c.notNull())
        .addColumn('description', 'varchar(500)', (c) => c.notNull().defaultTo(''))
        .addColumn('allowed_ips', 'text', (c) => c.notNull().defaultTo('[]'))
        .addColumn('last_used_at', 'bigint')
        .addColumn('revoked_at', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();

      await withId(db.schema.createTable('servers'), dialect)
        .addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())
        .addColumn('uuid_short', 'varchar(8)', (c) => c.notNull().unique())
        .addColumn('name', 'varchar(191)', (c) => c.notNull())
        .addColumn('owner_id', 'integer', (c) => c.notNull().references('users.id'))
        .addColumn('status', 'varchar(32)')
        .addColumn('backup_limit', 'integer', (c) => c.notNull().defaultTo(10))
        .addColumn('startup', 'text')
        .addColumn('stop_command', 'text')
        .addColumn('node', 'varchar(191)', (c) => c.notNull().defaultTo('local'))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('servers_owner_id_index').on('servers').column('owner_id').execute();

      await withId(db.schema.createTable('subusers'), dialect)
        .addColumn('server_id', 'integer', (c) => c.notNull().references('servers.id').onDelete('cascade'))
        .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('permissions', 'text', (c) => c.notNull().defaultTo('[]'))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addUniqueConstraint('subusers_server_user_unique', ['server_id', 'user_id'])
        .execute();
      await db.schema.createIndex('subusers_user_id_index').on('subusers').column('user_id').execute();

      await withId(db.schema.createTable('schedules'), dialect)
        .addColumn('server_id', 'integer', (c) => c.notNull().references('servers.id').onDelete('cascade'))
        .addColumn('name', 'varchar(191)', (c) => c.notNull())
        .addColumn('cron_minute', 'varchar(191)', (c) => c.notNull())
        .addColumn('cron_hour', 'varchar(191)', (c) => c.notNull())
        .addColumn('cron_day_of_month', 'varchar(191)', (c) => c.notNull())
        .addColumn('cron_month', 'varchar(191)', (c) => c.notNull())
        .addColumn('cron_day_of_week', 'varchar(191)', (c) => c.notNull())
        .addColumn('is_active', 'integer', (c) => c.notNull())
        .addColumn('is_processing', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('only_when_online', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('last_run_at', 'bigint')
        .addColumn('next_run_at', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('schedules_server_id_index').on('schedules').column('server_id').execute();
      await db.schema.createIndex('schedules_next_run_at_index').on('schedules').column('next_run_at').execute();

      await withId(db.schema.createTable('tasks'), dialect)
        .addColumn('schedule_id', 'integer', (c) => c.notNull().references('schedules.id').onDelete('cascade'))
        .addColumn('sequence_id', 'integer', (c) => c.notNull())
        .addColumn('action', 'varchar(32)', (c) => c.notNull())
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('time_offset', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('is_queued', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('continue_on_failure', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('tasks_schedule_sequence_index').on('tasks').columns(['schedule_id', 'sequence_id']).execute();

      await withId(db.schema.createTable('backups'), dialect)
        .addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())
        .addColumn('server_id', 'integer', (c) => c.notNull().references('servers.id').onDelete('cascade'))
        .addColumn('name', 'varchar(191)', (c) => c.notNull())
        .addColumn('ignored_files', 'text', (c) => c.notNull().defaultTo('[]'))
        .addColumn('checksum', 'varchar(191)')
        .addColumn('bytes', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('is_successful', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('is_locked', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('completed_at', 'bigint')
        .execute();
      await db.schema.createIndex('backups_server_created_index').on('backups').columns(['server_id', 'created_at']).execute();

      await withId(db.schema.createTable('activity_logs'), dialect, true)
        .addColumn('server_id', 'integer', (c) => c.notNull().references('servers.id').onDelete('cascade'))
        .addColumn('batch', 'varchar(36)')
        .addColumn('event', 'varchar(191)', (c) => c.notNull())
        .addColumn('ip', 'varchar(45)')
        .addColumn('description', 'text')
        .addColumn('actor_id', 'integer', (c) => c.references('users.id').onDelete('set null'))
        .addColumn('api_key_id', 'integer')
        .addColumn('properties', 'text', (c) => c.notNull().defaultTo('{}'))
        .addColumn('timestamp', 'bigint', (c) => c.notNull())
        .execute();
      // The listing (docs/reference/activity.md#listing) reads one server's entries in timestamp-then-insertion order.
      await db.schema
        .createIndex('activity_logs_server_timestamp_index')
        .on('activity_logs')
        .columns(['server_id', 'timestamp', 'id'])
        .execute();
      await db.schema
        .createIndex('activity_logs_server_actor_index')
        .on('activity_logs')
        .columns(['server_id', 'actor_id', 'timestamp', 'id'])
        .execute();
    },
  };
}
