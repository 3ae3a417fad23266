import type { AppDeps } from '../../deps.js';
import type { ServerRow } from '../../db/schema.js';
import { badRequest, notFound, ValidationError } from '../../http/errors.js';
import { recordActivities, type Actor } from '../activity/activity.recorder.js';
import { dockerImagesOf } from '../startup/startup.service.js';
import { findEgg } from '../eggs/eggs.repository.js';
import type { DockerImageInput, RenameServerInput } from './settings.schemas.js';
import { lockServerForSettings, setServerImage, setServerNameAndDescription } from './settings.repository.js';

type Deps = Pick<AppDeps, 'db' | 'clock'>;

/**
 * POST /settings/rename (Pterodactyl's SettingsController::rename): the name,
 * and the description when one is given (docs/reference/api.md#wire-conventions: an empty one is "not given",
 * so the description is kept). Logged `server:settings.rename` and
 * `server:settings.description`, each only when it changed, in the transaction
 * that changes them.
 */
export async function renameServer(deps: Deps, server: ServerRow, actor: Actor, input: RenameServerInput): Promise<void> {
  const name = input.name.trim();
  await deps.db.transaction().execute(async (trx) => {
    const now = deps.clock.now();
    const current = await lockServerForSettings(trx, server.id);
    if (!current) throw notFound();
    const description = input.description ?? current.description;
    await setServerNameAndDescription(trx, current.id, { name, description }, now);
    const entries = [];
    if (current.name !== name) {
      entries.push({
        serverId: current.id,
        event: 'server:settings.rename',
        actor,
        properties: { old: current.name, new: name },
        timestamp: now,
      });
    }
    if (current.description !== description) {
      entries.push({
        serverId: current.id,
        event: 'server:settings.description',
        actor,
        properties: { old: current.description, new: description },
        timestamp: now,
      });
    }
    await recordActivities(trx, entries);
  });
}

/**
 * PUT /settings/docker-image (SettingsController::dockerImage): one of the
 * egg's images (else a 422 `in` on `docker_image`, as SetDockerImageRequest).
 * A server whose image an administrator set outside the egg's list, or that
 * has no egg at all, keeps it: 400 with Pterodactyl's sentence. The image is
 * used from the next start; logged `server:startup.image` when it changed.
 */
export async function setDockerImage(deps: Deps, server: ServerRow, actor: Actor, input: DockerImageInput): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    const now = deps.clock.now();
    const current = await lockServerForSettings(trx, server.id);
    if (!current) throw notFound();
    const egg = current.egg_id === null ? undefined : await findEgg(trx, current.egg_id);
    const allowed = Object.values(dockerImagesOf(egg));
    // null: the server has never had an image set (it runs on `host`, the default), so nothing was set by hand.
    if (!egg || (current.image !== null && !allowed.includes(current.image))) {
      throw badRequest("This server's Docker image has been manually set by an administrator and cannot be updated.");
    }
    if (!allowed.includes(input.docker_image)) {
      throw ValidationError.of('docker_image', 'in', 'The selected docker image is invalid.');
    }
    if (current.image === input.docker_image) return;
    await setServerImage(trx, current.id, input.docker_image, now);
    await recordActivities(trx, [
      {
        serverId: current.id,
        event: 'server:startup.image',
        actor,
        properties: { old: current.image, new: input.docker_image },
        timestamp: now,
      },
    ]);
  });
}
