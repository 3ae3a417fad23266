/**
 * Creating a server from an egg (docs/reference/eggs-and-installs.md, `server:create --egg`): which image
 * it runs on, its startup and stop command copied from the egg (as
 * Pterodactyl copies the startup), and its variables validated by their rules
 * with the defaults filled in.
 */
import type { DaemonImages } from '../../daemon/daemon.js';
import type { Queryable } from '../../db/database.js';
import type { EggRow } from '../../db/schema.js';
import { findEgg, listEggVariables, setServerVariable } from './eggs.repository.js';
import { eggImageNames } from './eggs.service.js';
import { validateVariableValue } from './variable-rules.js';

/** A choice the egg refuses (an unknown egg, image or variable, a value its rules refuse): the reason, one line. */
export class EggServerError extends Error {}

/** The image that means the machine's own /usr; stored as null (servers.image). */
const HOST_IMAGE = 'host';

export interface EggServerPlan {
  egg: EggRow;
  /** servers.image: null = `host`. */
  image: string | null;
  startup: string;
  stopCommand: string | null;
  /** Every variable of the egg with the value the server gets (the given one, else the default). */
  values: { variableId: number; envVariable: string; value: string }[];
}

/**
 * Checks the admin's choices against egg `eggId` before anything is written.
 * `image`: one of the egg's images (the first when absent), or any image the
 * node has (an admin may run an egg on an image of their own, as
 * Pterodactyl's admin may set any image). `variables`: `KEY=VALUE` texts;
 * every variable, given or default, must pass its rules, as Pterodactyl
 * checks them for an admin (all variables, not only the user-editable ones).
 */
export async function planEggServer(
  db: Queryable,
  images: Pick<DaemonImages, 'get'>,
  eggId: number,
  choices: { image?: string | undefined; variables: readonly string[] },
): Promise<EggServerPlan> {
  const egg = await findEgg(db, eggId);
  if (!egg) throw new EggServerError(`egg ${eggId} does not exist (egg:list shows the eggs)`);
  const eggImages = eggImageNames(egg);
  const image = choices.image ?? eggImages[0]!;
  if (!eggImages.includes(image) && (await images.get(image)) === null) {
    throw new EggServerError(
      `image "${image}" is neither one of the egg's (${eggImages.join(', ')}) nor an image of this node (image:list)`,
    );
  }

  const given = parseVariableAssignments(choices.variables);
  const variables = await listEggVariables(db, egg.id);
  const known = new Set(variables.map((v) => v.env_variable));
  for (const key of given.keys()) {
    if (!known.has(key)) {
      throw new EggServerError(`the egg has no variable ${key} (its variables: ${[...known].join(', ') || 'none'})`);
    }
  }
  const values = variables.map((variable) => {
    const value = given.get(variable.env_variable) ?? variable.default_value;
    const failure = validateVariableValue(variable.rules, value, `${variable.name} variable`);
    if (failure !== null) throw new EggServerError(`--variable ${variable.env_variable}: ${failure}`);
    return { variableId: variable.id, envVariable: variable.env_variable, value };
  });
  return {
    egg,
    image: image === HOST_IMAGE ? null : image,
    startup: egg.startup,
    stopCommand: egg.config_stop,
    values,
  };
}

/** `KEY=VALUE` texts as a map; a text without `=` or a key given twice is refused. */
function parseVariableAssignments(assignments: readonly string[]): Map<string, string> {
  const result = new Map<string, string>();
  for (const assignment of assignments) {
    const eq = assignment.indexOf('=');
    if (eq <= 0) throw new EggServerError(`--variable must be KEY=VALUE, got "${assignment}"`);
    const key = assignment.slice(0, eq).trim();
    if (result.has(key)) throw new EggServerError(`--variable ${key} given twice`);
    result.set(key, assignment.slice(eq + 1));
  }
  return result;
}

/** Stores the plan's variable values for the new server (in the caller's transaction, with the server's row). */
export async function saveEggServerVariables(db: Queryable, serverId: number, plan: EggServerPlan, now: number): Promise<void> {
  for (const { variableId, value } of plan.values) await setServerVariable(db, serverId, variableId, value, now);
}
