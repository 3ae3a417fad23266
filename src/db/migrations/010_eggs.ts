import type { Kysely } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * Eggs, their variables and each server's values of them (docs/reference/eggs-and-installs.md,
 * Pterodactyl's `eggs`, `egg_variables` and `server_variables`), and what a
 * server runs on: `servers.egg_id` (null = no egg: a plain startup command),
 * `servers.image` (an image's name; null = `host`, the machine's own /usr),
 * `servers.description` (POST /settings/rename).
 *
 * An egg's JSON members (`docker_images`, `config_files`, `config_startup`,
 * `file_denylist`, `features`) are stored as the egg file had them, as text.
 * Deleting an egg is refused while a server uses it (no cascade); deleting a
 * server deletes its variable values.
 */
export function eggsMigration(dialect: DialectName) {
  const idColumn = <T extends { addColumn: (...args: any[]) => T }>(table: T): T =>
    dialect === 'sqlite'
      ? table.addColumn('id', 'integer', (c: any) => c.primaryKey().autoIncrement())
      : table.addColumn('id', 'serial', (c: any) => c.primaryKey());
  return {
    async up(db: Kysely<any>): Promise<void> {
      await idColumn(db.schema.createTable('eggs'))
        .addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())
        .addColumn('name', 'varchar(191)', (c) => c.notNull())
        .addColumn('author', 'varchar(191)', (c) => c.notNull().defaultTo(''))
        .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('docker_images', 'text', (c) => c.notNull())
        .addColumn('startup', 'text', (c) => c.notNull())
        .addColumn('config_stop', 'text')
        .addColumn('config_startup', 'text', (c) => c.notNull())
        .addColumn('config_files', 'text', (c) => c.notNull())
        .addColumn('file_denylist', 'text', (c) => c.notNull())
        .addColumn('features', 'text', (c) => c.notNull())
        .addColumn('script_install', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('script_container', 'varchar(191)', (c) => c.notNull().defaultTo(''))
        .addColumn('script_entrypoint', 'varchar(191)', (c) => c.notNull().defaultTo(''))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();

      await idColumn(db.schema.createTable('egg_variables'))
        .addColumn('egg_id', 'integer', (c) => c.notNull().references('eggs.id').onDelete('cascade'))
        .addColumn('sort', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('name', 'varchar(191)', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('env_variable', 'varchar(191)', (c) => c.notNull())
        .addColumn('default_value', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('user_viewable', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('user_editable', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('rules', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addUniqueConstraint('egg_variables_egg_env_unique', ['egg_id', 'env_variable'])
        .execute();

      await idColumn(db.schema.createTable('server_variables'))
        .addColumn('server_id', 'integer', (c) => c.notNull().references('servers.id').onDelete('cascade'))
        .addColumn('variable_id', 'integer', (c) => c.notNull().references('egg_variables.id').onDelete('cascade'))
        .addColumn('variable_value', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addUniqueConstraint('server_variables_server_variable_unique', ['server_id', 'variable_id'])
        .execute();

      await db.schema
        .alterTable('servers')
        .addColumn('egg_id', 'integer', (c) => c.references('eggs.id'))
        .execute();
      await db.schema.alterTable('servers').addColumn('image', 'varchar(191)').execute();
      await db.schema
        .alterTable('servers')
        .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
        .execute();
    },
  };
}
