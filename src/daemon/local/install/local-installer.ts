/**
 * Install scripts in installer boxes (SPEC 16). Placeholder until installs land (issue 20).
 */
import { DaemonError, type DaemonServer, type InstallOutcome, type InstallScript } from '../../daemon.js';

export class LocalInstaller {
  async install(_server: DaemonServer, _script: InstallScript, _onLine: (line: string) => void): Promise<InstallOutcome> {
    throw new DaemonError('installs are not supported yet');
  }

  async log(_server: DaemonServer, _lines: number): Promise<string[]> {
    return [];
  }

  async abort(_server: DaemonServer): Promise<void> {}
}
