/**
 * What an install script runs with (docs/reference/eggs-and-installs.md): the egg's script, its image
 * and entrypoint, and the server's environment (every egg variable with the
 * server's value, STARTUP, SERVER_MEMORY, SERVER_IP, SERVER_PORT,
 * P_SERVER_UUID, P_SERVER_LOCATION), as Wings gives its installer.
 */
import type { Daemon, DaemonServer, InstallScript } from '../../daemon/daemon.js';
import type { Queryable } from '../../db/database.js';
import type { ServerRow } from '../../db/schema.js';
import { serverEnvironment } from '../eggs/egg-runtime.js';
import { findEgg, serverVariableValues } from '../eggs/eggs.repository.js';

/** The image installs run on when the egg names none this node has. */
export const HOST_IMAGE = 'host';

/** The install script of the server's egg; null when the server has no egg or its egg no script. */
export async function installScriptFor(
  db: Queryable,
  daemon: Pick<Daemon, 'images'>,
  server: ServerRow,
  target: DaemonServer,
): Promise<InstallScript | null> {
  if (server.egg_id === null) return null;
  const egg = await findEgg(db, server.egg_id);
  if (!egg || egg.script_install.trim() === '') return null;
  const environment = serverEnvironment({
    server: { ...server, startup: server.startup ?? egg.startup },
    primary: target.allocations?.[0],
    variables: await serverVariableValues(db, server.id),
  });
  // The egg's installer image when this node has one of that name (docs/reference/eggs-and-installs.md), the machine's own otherwise.
  const container = egg.script_container.trim();
  const image = container !== '' && (await daemon.images.get(container)) !== null ? container : HOST_IMAGE;
  return { script: egg.script_install, image, entrypoint: egg.script_entrypoint.trim() || 'bash', environment };
}
