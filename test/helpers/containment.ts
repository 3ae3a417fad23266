/**
 * Containment for tests, as the service decides it (docs/reference/containment.md): CONTAINMENT
 * from the environment (`auto` when unset), so that `npm test` as root with
 * runc installed (CI) runs every server confined, and `CONTAINMENT=off npm
 * test` runs the same suites unconfined.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../src/config.js';
import { resolveContainment, type ContainerRuntime } from '../../src/daemon/local/container/container-runtime.js';
import { localDaemonPaths } from '../../src/daemon/local/local-daemon.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ECHO_SERVER = path.join(ROOT, 'test/fixtures/echo-server.mjs');
/** The echo fixture's name inside a volume (installEchoServer): a server's own program, as a game server's jar is. */
export const ECHO_FILE = 'echo-server.mjs';
/** Runs the echo fixture from the volume, which is all a confined process sees. */
export const ECHO_STARTUP = `node ${ECHO_FILE}`;

let warned = false;

export async function testContainment(dataDir: string): Promise<ContainerRuntime | null> {
  const config = loadConfig({
    DATA_DIR: dataDir,
    CONTAINMENT: process.env.CONTAINMENT ?? 'auto',
    SERVER_UID: process.env.SERVER_UID ?? '988',
  });
  return resolveContainment(
    {
      mode: config.containment,
      uid: config.serverUid,
      dataDir: config.dataDir,
      runDir: localDaemonPaths(config.dataDir).run,
      serverNetwork: config.serverNetwork,
    },
    {
      warn(obj) {
        if (warned) return;
        warned = true;
        console.warn(`tests run server processes unconfined: ${String((obj as { reason?: string }).reason)}`);
      },
    },
  );
}

/** Copies the echo fixture into a volume (readable by any uid), for ECHO_STARTUP. */
export function installEchoServer(volumeDir: string): void {
  fs.mkdirSync(volumeDir, { recursive: true });
  fs.copyFileSync(ECHO_SERVER, path.join(volumeDir, ECHO_FILE));
  fs.chmodSync(path.join(volumeDir, ECHO_FILE), 0o644);
}
