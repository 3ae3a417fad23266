import type { AppDeps } from '../../deps.js';
import type { Queryable } from '../../db/database.js';
import type { EggRow, ServerRow, UserRow } from '../../db/schema.js';
import { badRequest, notFound } from '../../http/errors.js';
import { can, type Access } from '../../http/permissions.js';
import { findSubuserPermissionsOn } from '../subusers/subusers.repository.js';
import { recordActivity, type Actor } from '../activity/activity.recorder.js';
import { findAllocationOfServer } from '../allocations/allocations.repository.js';
import { renderStartupCommand } from './startup.command.js';
import { lockServerForSettings } from '../settings/settings.repository.js';
import { findEgg, serverVariableValues, setServerVariable } from '../eggs/eggs.repository.js';
import { findEggVariablesOfServers, type ServerEggVariable } from './startup.repository.js';
import type { UpdateVariableInput } from './startup.schemas.js';
import { assertVariableValue } from './variable-validation.js';

type Deps = Pick<AppDeps, 'db' | 'clock'>;

/** What GET /startup shows: the user-viewable variables, the command raw and filled in, the egg's images. */
export interface StartupView {
  variables: ServerEggVariable[];
  startupCommand: string;
  rawStartupCommand: string;
  dockerImages: Record<string, string>;
}

/**
 * An egg's `docker_images` as Pterodactyl's clients get them: display name →
 * image. Old (PTDL_v1) eggs list bare images: each is then its own name.
 */
export function dockerImagesOf(egg: Pick<EggRow, 'docker_images'> | undefined): Record<string, string> {
  if (!egg) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(egg.docker_images);
  } catch {
    return {};
  }
  if (Array.isArray(parsed)) return Object.fromEntries(parsed.filter((v) => typeof v === 'string').map((v) => [v, v]));
  if (parsed === null || typeof parsed !== 'object') return {};
  return Object.fromEntries(Object.entries(parsed).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
}

/** The server's egg variables (none without an egg) and the context its startup command is filled from. */
async function startupInputs(db: Queryable, server: ServerRow) {
  const variables: ServerEggVariable[] = server.egg_id === null ? [] : await serverVariableValues(db, server.id);
  const allocation =
    server.allocation_id === null ? undefined : await findAllocationOfServer(db, server.allocation_id, server.id);
  const context = { memoryMiB: server.memory_mib, allocation: allocation ? { ip: allocation.ip, port: allocation.port } : null };
  return { variables, context };
}

/**
 * GET /startup (Pterodactyl's StartupController::index). A server without an
 * egg has no variables and no images: its raw startup command (server:create
 * --startup) is all there is.
 */
export async function readStartup(db: Queryable, server: ServerRow): Promise<StartupView> {
  const { variables, context } = await startupInputs(db, server);
  const egg = server.egg_id === null ? undefined : await findEgg(db, server.egg_id);
  const raw = server.startup ?? '';
  return {
    variables: variables.filter((variable) => variable.user_viewable === 1),
    startupCommand: renderStartupCommand(raw, context, variables),
    rawStartupCommand: raw,
    dockerImages: dockerImagesOf(egg),
  };
}

/**
 * What the server object shows of its startup (Pterodactyl's ServerTransformer):
 * `invocation` with every value `[hidden]` and no `variables` relationship for a
 * viewer without `startup.read`.
 */
export interface StartupShown {
  variables: ServerEggVariable[];
  canReadStartup: boolean;
}

/** The server's egg variables, as one server object shows them to `access`. */
export async function startupShownTo(db: Queryable, access: Access, server: ServerRow): Promise<StartupShown> {
  const variables: ServerEggVariable[] = server.egg_id === null ? [] : await serverVariableValues(db, server.id);
  return { variables, canReadStartup: can(access, 'startup.read') };
}

/** The same for a page of the server list: three queries at most, whatever its size. */
export async function startupOfServersShownTo(
  db: Queryable,
  viewer: UserRow,
  servers: readonly ServerRow[],
): Promise<Map<number, StartupShown>> {
  const variables = await findEggVariablesOfServers(db, servers);
  const subuserOf = servers.filter((server) => viewer.root_admin !== 1 && server.owner_id !== viewer.id);
  const permissions = await findSubuserPermissionsOn(
    db,
    viewer.id,
    subuserOf.map((server) => server.id),
  );
  const shown = new Map<number, StartupShown>();
  for (const server of servers) {
    const owner = viewer.root_admin === 1 || server.owner_id === viewer.id;
    const canReadStartup = owner || (permissions.get(server.id) ?? []).includes('startup.read');
    shown.set(server.id, { variables: variables.get(server.id) ?? [], canReadStartup });
  }
  return shown;
}

/**
 * PUT /startup/variable (StartupController::update): an unknown or hidden
 * variable is a 400 ("does not exist"), a read-only one a 400 too, a value its
 * rules refuse a 422 on `value`. The value and its `server:startup.edit` entry
 * commit together; it takes effect at the next start.
 */
export async function updateStartupVariable(
  deps: Deps,
  server: ServerRow,
  actor: Actor,
  input: UpdateVariableInput,
): Promise<{ variable: ServerEggVariable; startupCommand: string; rawStartupCommand: string }> {
  const value = input.value === undefined ? '' : String(input.value);
  return deps.db.transaction().execute(async (trx) => {
    const now = deps.clock.now();
    const current = await lockServerForSettings(trx, server.id);
    if (!current) throw notFound();
    const { variables, context } = await startupInputs(trx, current);
    const variable = variables.find((candidate) => candidate.env_variable === input.key);
    if (!variable || variable.user_viewable !== 1) {
      throw badRequest('The environment variable you are trying to edit does not exist.');
    }
    if (variable.user_editable !== 1) throw badRequest('The environment variable you are trying to edit is read-only.');
    assertVariableValue(variable.rules, value);
    await setServerVariable(trx, current.id, variable.id, value, now);
    const updated = { ...variable, server_value: value };
    if (variable.server_value !== value) {
      await recordActivity(trx, {
        serverId: current.id,
        event: 'server:startup.edit',
        actor,
        properties: { variable: variable.env_variable, old: variable.server_value, new: value },
        timestamp: now,
      });
    }
    const all = variables.map((candidate) => (candidate.id === variable.id ? updated : candidate));
    const raw = current.startup ?? '';
    return { variable: updated, startupCommand: renderStartupCommand(raw, context, all), rawStartupCommand: raw };
  });
}
