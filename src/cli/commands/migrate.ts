import type { CliCommand } from '../command.js';

/** `migrate`: every command migrates before it runs, so there is nothing left to do here. */
export const command: CliCommand = {
  name: 'migrate',
  usage: '',
  valueOptions: [],
  async run() {
    return { migrated: true };
  },
};
