import type { InstallScript } from '../../src/daemon/daemon.js';

/** An install script for the daemon's installer tests: on the host image, run by ash, with one variable. */
export const script = (text: string, extra: Partial<InstallScript> = {}): InstallScript => ({
  script: text,
  image: 'host',
  entrypoint: 'ash',
  environment: { VERSION: '1.2.3' },
  ...extra,
});
