import type { Kysely } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * A server's limits (docs/reference/containment.md, Pterodactyl's units; 0 = unlimited): memory and
 * disk in MiB, cpu in percent of one core. `pids` null leaves the choice to the
 * daemon (512 when confined); 0 is unlimited. Existing servers get no limits.
 */
export function serverLimitsMigration(_dialect: DialectName) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      for (const column of ['memory_mib', 'cpu_percent', 'disk_mib']) {
        await db.schema
          .alterTable('servers')
          .addColumn(column, 'integer', (c) => c.notNull().defaultTo(0))
          .execute();
      }
      await db.schema.alterTable('servers').addColumn('pids', 'integer').execute();
    },
  };
}
