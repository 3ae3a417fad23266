import { CliError, requireOption, type CliCommand } from '../command.js';
import { AllocationPoolError, removeAllocations } from '../../modules/allocations/allocations.pool.js';
import { parseIpv4, parsePorts } from './allocation-options.js';

/**
 * `allocation:remove --ip IP --ports P[,P-Q...]` (docs/reference/network-and-allocations.md, docs/reference/cli.md):
 * `removed` counts those that existed. Refused as a whole while a server holds
 * any of them. The address need not be the machine's any more: one that went
 * away can be cleaned up.
 */
export const command: CliCommand = {
  name: 'allocation:remove',
  usage: '--ip IP --ports P[,P-Q...]',
  valueOptions: ['ip', 'ports'],
  async run(ctx, options) {
    const ip = parseIpv4(requireOption(options, 'ip'), 'ip');
    const ports = parsePorts(requireOption(options, 'ports'));
    try {
      return { removed: await removeAllocations(ctx.database.db, { ip, ports }) };
    } catch (err) {
      if (err instanceof AllocationPoolError) throw new CliError(err.message);
      throw err;
    }
  },
};
