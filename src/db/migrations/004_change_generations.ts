import { sql, type Kysely } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * A generation number per table whose rows other cached data is rendered from,
 * raised by a trigger on every insert, update and delete, whoever writes: the
 * service, an admin command, or an operator with a SQL prompt. A cache stores
 * the generation it read and trusts its copy only while the number is the
 * same (the activity listing cache, docs/PERFORMANCE.md). Only `users` so far:
 * an activity entry shows its actor's user attributes.
 */
export function changeGenerationsMigration(dialect: DialectName) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('change_generations')
        .addColumn('name', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('generation', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.insertInto('change_generations').values({ name: 'users', generation: 0 }).execute();

      if (dialect === 'postgres') {
        // `set search_path from current`: the function finds the table in the schema it was created in.
        await sql`
          create function bump_users_generation() returns trigger language plpgsql
          set search_path from current as $$
          begin
            update change_generations set generation = generation + 1 where name = 'users';
            return null;
          end $$`.execute(db);
        await sql`
          create trigger users_generation after insert or update or delete or truncate on users
          for each statement execute function bump_users_generation()`.execute(db);
        return;
      }
      for (const event of ['insert', 'update', 'delete']) {
        await sql`
          create trigger ${sql.raw(`users_generation_${event}`)} after ${sql.raw(event)} on users
          begin
            update change_generations set generation = generation + 1 where name = 'users';
          end`.execute(db);
      }
    },
  };
}
