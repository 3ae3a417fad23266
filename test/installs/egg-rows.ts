/**
 * An egg as `egg:import` stores it (migration 010's rows), written directly:
 * its install script writes a small server program into /mnt/server, as
 * Pterodactyl's eggs download a jar. One variable (VERSION) with a default,
 * and the server's own value for it.
 */
import { randomUUID } from 'node:crypto';
import type { Database } from '../../src/db/database.js';
import type { ServerRow } from '../../src/db/schema.js';

/** In Pterodactyl's style: `#!/bin/ash`, CRLF line ends, `cd /mnt/server`, variables from the environment. */
export const PROGRAM_SCRIPT = [
  '#!/bin/ash',
  'set -e',
  'cd /mnt/server',
  'echo "installing version ${VERSION} on port ${SERVER_PORT:-none} for ${P_SERVER_UUID}"',
  'printf \'console.log("hello from version %s");\\n\' "$VERSION" > server.mjs',
  'mkdir -p config && echo "memory=${SERVER_MEMORY}" > config/install.txt',
  'echo "install done"',
].join('\r\n');

export async function makeEgg(
  db: Database,
  options: { script: string; entrypoint?: string; container?: string; now: number },
): Promise<{ eggId: number; variableId: number }> {
  const egg = await db
    .insertInto('eggs')
    .values({
      uuid: randomUUID(),
      name: 'Test program',
      docker_images: JSON.stringify({ Host: 'host' }),
      startup: 'node server.mjs',
      config_stop: '^C',
      config_startup: JSON.stringify({ done: 'hello from' }),
      config_files: '{}',
      file_denylist: '[]',
      features: '[]',
      script_install: options.script,
      script_container: options.container ?? 'ghcr.io/pterodactyl/installers:alpine',
      script_entrypoint: options.entrypoint ?? 'bash',
      created_at: options.now,
      updated_at: options.now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const variable = await db
    .insertInto('egg_variables')
    .values({
      egg_id: egg.id,
      name: 'Version',
      env_variable: 'VERSION',
      default_value: '1.0.0',
      user_viewable: 1,
      user_editable: 1,
      rules: 'required|string|max:20',
      created_at: options.now,
      updated_at: options.now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { eggId: egg.id, variableId: variable.id };
}

/** Gives the server the egg, and its own VERSION when `version` is set. */
export async function useEgg(
  db: Database,
  server: ServerRow,
  egg: { eggId: number; variableId: number },
  version: string | null,
  now: number,
): Promise<void> {
  await db.updateTable('servers').set({ egg_id: egg.eggId }).where('id', '=', server.id).execute();
  if (version !== null)
    await db
      .insertInto('server_variables')
      .values({ server_id: server.id, variable_id: egg.variableId, variable_value: version, created_at: now, updated_at: now })
      .execute();
}
