/**
 * Installing a server (SPEC 16): the egg's install script in an installer box,
 * status `installing` until it ends. Placeholder until installs land (issue 20).
 */
import type { AppDeps } from '../../deps.js';
import type { ServerStatus } from '../../db/schema.js';

export interface InstallRequest {
  /** A reinstall (POST /settings/reinstall, `server:reinstall`): the server is stopped first. */
  readonly reinstall: boolean;
}

/**
 * Runs the install of server `serverId` (its egg's script) and resolves once it
 * ended, with the server's status then (null, or `install_failed`). A server
 * without an egg, or whose egg has no script, is simply marked installed.
 */
export async function installServer(
  _deps: Pick<AppDeps, 'db' | 'daemon' | 'clock' | 'serverEvents'>,
  _serverId: number,
  _request: InstallRequest,
): Promise<{ status: ServerStatus | null }> {
  return { status: null };
}
