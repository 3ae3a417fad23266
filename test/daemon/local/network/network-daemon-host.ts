/**
 * A service instance for the crash tests: a confined LocalDaemon on DATA_DIR
 * (argv[2]) that starts one server (argv[3], a DaemonServer as JSON), prints
 * `started` and then waits to be SIGKILLed.
 */
import path from 'node:path';
import type { DaemonServer } from '../../../../src/daemon/daemon.js';
import { resolveContainment } from '../../../../src/daemon/local/container/container-runtime.js';
import { LocalDaemon } from '../../../../src/daemon/local/local-daemon.js';

const dataDir = process.argv[2]!;
const target = JSON.parse(process.argv[3]!) as DaemonServer;
const runtime = await resolveContainment(
  { mode: 'on', uid: 988, dataDir, runDir: path.join(dataDir, 'run') },
  { warn: () => undefined },
);
if (runtime === null) throw new Error('containment was not resolved');
const daemon = new LocalDaemon(dataDir, { stopGraceMs: 500, containers: runtime });
await daemon.start();
await daemon.power(target, 'start');
process.stdout.write('started\n');
setInterval(() => undefined, 60_000);
