/**
 * Eggs (docs/reference/eggs-and-installs.md): importing an egg file and reading a stored egg's JSON
 * members back.
 */
import type { Database } from '../../db/database.js';
import type { EggRow } from '../../db/schema.js';
import { parseEggFile, type EggConfigFile, type EggFile } from './egg-file.js';
import {
  deleteEggVariables,
  findEggByUuid,
  insertEgg,
  insertEggVariable,
  listEggVariables,
  updateEgg,
  updateEggVariable,
} from './eggs.repository.js';

export interface ImportedEgg {
  id: number;
  name: string;
  /** False when an egg of the same uuid existed and was updated. */
  created: boolean;
}

/**
 * Imports the egg file `content`: a new egg, or (same uuid) the existing one
 * updated, its variables matched by env_variable (servers keep their values
 * of those), new ones added, the ones the file no longer has deleted with
 * their values. Throws EggFileError before writing anything when the file is
 * not a valid egg. One transaction: a SIGKILL mid-import leaves the egg as it
 * was before, or fully imported.
 */
export async function importEgg(db: Database, content: string, now: number): Promise<ImportedEgg> {
  const egg = parseEggFile(content);
  return db.transaction().execute(async (trx) => {
    const columns = eggColumns(egg, now);
    const existing = await findEggByUuid(trx, egg.uuid);
    let id: number;
    if (existing) {
      id = existing.id;
      await updateEgg(trx, id, columns);
    } else {
      id = await insertEgg(trx, { ...columns, uuid: egg.uuid, created_at: now });
    }
    const current = new Map((await listEggVariables(trx, id)).map((v) => [v.env_variable, v]));
    for (const variable of egg.variables) {
      const values = {
        sort: variable.sort,
        name: variable.name,
        description: variable.description,
        default_value: variable.default_value,
        user_viewable: variable.user_viewable ? 1 : 0,
        user_editable: variable.user_editable ? 1 : 0,
        rules: variable.rules,
        updated_at: now,
      };
      const row = current.get(variable.env_variable);
      if (row) {
        await updateEggVariable(trx, row.id, values);
        current.delete(variable.env_variable);
      } else {
        await insertEggVariable(trx, { ...values, egg_id: id, env_variable: variable.env_variable, created_at: now });
      }
    }
    await deleteEggVariables(
      trx,
      [...current.values()].map((v) => v.id),
    );
    return { id, name: egg.name, created: !existing };
  });
}

function eggColumns(egg: EggFile, now: number) {
  return {
    name: egg.name,
    author: egg.author,
    description: egg.description,
    docker_images: JSON.stringify(egg.docker_images),
    startup: egg.startup,
    config_stop: egg.config_stop,
    config_startup: JSON.stringify({ done: egg.done }),
    config_files: JSON.stringify(egg.config_files),
    file_denylist: JSON.stringify(egg.file_denylist),
    features: JSON.stringify(egg.features),
    script_install: egg.script_install,
    script_container: egg.script_container,
    script_entrypoint: egg.script_entrypoint,
    updated_at: now,
  };
}

/** The egg's images (display name → image name), in its file's order: the first is the default. */
export function eggDockerImages(egg: Pick<EggRow, 'docker_images'>): Record<string, string> {
  return JSON.parse(egg.docker_images) as Record<string, string>;
}

/** The egg's images' names, the default first. */
export function eggImageNames(egg: Pick<EggRow, 'docker_images'>): string[] {
  return [...new Set(Object.values(eggDockerImages(egg)))];
}

/** The console lines that mean "started" (`config.startup.done`; stored as `{done: string | string[]}`). */
export function eggDoneLines(egg: Pick<EggRow, 'config_startup'>): string[] {
  const done = (JSON.parse(egg.config_startup) as { done?: string | string[] | null }).done;
  if (done === undefined || done === null) return [];
  return (typeof done === 'string' ? [done] : done).filter((line) => line !== '');
}

/** `config.files` as stored: file → {parser, find} with Wings' placeholders unresolved. */
export function eggConfigFiles(egg: Pick<EggRow, 'config_files'>): Record<string, EggConfigFile> {
  return JSON.parse(egg.config_files) as Record<string, EggConfigFile>;
}
