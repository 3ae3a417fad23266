import { randomUUID } from 'node:crypto';
import type { EggRow, EggVariableRow, ServerRow } from '../../src/db/schema.js';
import type { Harness } from '../helpers/harness.js';

export interface VariableSpec {
  env: string;
  name?: string;
  default?: string;
  rules?: string;
  viewable?: boolean;
  editable?: boolean;
}

/**
 * An egg as egg:import stores it (rows in eggs and egg_variables), made
 * directly so these tests do not depend on the importer: a Minecraft-like
 * startup with three variables of different visibility.
 */
export async function makeEgg(
  h: Harness,
  opts: { images?: Record<string, string>; startup?: string; variables?: VariableSpec[] } = {},
): Promise<{ egg: EggRow; variables: EggVariableRow[] }> {
  const now = h.clock.now();
  const egg = await h.db.db
    .insertInto('eggs')
    .values({
      uuid: randomUUID(),
      name: `egg ${randomUUID().slice(0, 6)}`,
      docker_images: JSON.stringify(
        opts.images ?? { 'Java 17': 'ghcr.io/pterodactyl/yolks:java_17', 'Java 21': 'ghcr.io/pterodactyl/yolks:java_21' },
      ),
      startup: opts.startup ?? 'java -Xmx{{SERVER_MEMORY}}M -jar {{SERVER_JARFILE}} --port {{SERVER_PORT}} --seed {{LEVEL_SEED}}',
      config_stop: 'stop',
      config_startup: '{}',
      config_files: '{}',
      file_denylist: '[]',
      features: '[]',
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  const specs = opts.variables ?? [
    { env: 'SERVER_JARFILE', name: 'Server Jar File', default: 'server.jar', rules: 'required|regex:/^([\\w\\d._-]+)(\\.jar)$/' },
    { env: 'LEVEL_SEED', name: 'Level Seed', default: '', rules: 'nullable|string|max:20', editable: true },
    { env: 'BUILD_NUMBER', name: 'Build Number', default: 'latest', rules: 'required|string|max:20', editable: false },
    { env: 'MAX_PLAYERS', name: 'Max Players', default: '20', rules: 'required|integer|between:1,100' },
    { env: 'SECRET_TOKEN', name: 'Secret', default: 's3cret', rules: 'required|string', viewable: false, editable: false },
  ];
  const variables = [];
  for (const [sort, spec] of specs.entries()) {
    variables.push(
      await h.db.db
        .insertInto('egg_variables')
        .values({
          egg_id: egg.id,
          sort,
          name: spec.name ?? spec.env,
          description: `${spec.env} of the server`,
          env_variable: spec.env,
          default_value: spec.default ?? '',
          user_viewable: spec.viewable === false ? 0 : 1,
          user_editable: spec.editable === false ? 0 : 1,
          rules: spec.rules ?? 'nullable|string',
          created_at: now,
          updated_at: now,
        })
        .returningAll()
        .executeTakeFirstOrThrow(),
    );
  }
  return { egg, variables };
}

/** Puts `server` on `egg` with the egg's startup (what server:create --egg does) and `image`. */
export async function useEgg(h: Harness, server: ServerRow, egg: EggRow, image: string | null): Promise<ServerRow> {
  return h.db.db
    .updateTable('servers')
    .set({ egg_id: egg.id, startup: egg.startup, image })
    .where('id', '=', server.id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The server's activity entries, oldest first. */
export async function eventsOf(h: Harness, server: ServerRow) {
  const rows = await h.db.db.selectFrom('activity_logs').selectAll().where('server_id', '=', server.id).orderBy('id').execute();
  return rows.map((row) => ({ event: row.event, actor_id: row.actor_id, properties: JSON.parse(row.properties) as unknown }));
}
