import { CliError, requireOption, type CliCommand } from '../command.js';
import { addAllocations, AllocationPoolError } from '../../modules/allocations/allocations.pool.js';
import { addressesOverlap, parseMachineIp, parsePorts } from './allocation-options.js';
import { characters, optionalOption } from './lookups.js';

const ALIAS_MAX = 191;

/**
 * `allocation:add --ip IP --ports P[,P-Q...] [--alias NAME]` (docs/reference/network-and-allocations.md,
 * docs/reference/cli.md): adds free allocations; those that exist already are skipped,
 * so `created` counts the new ones. IP is an IPv4 address of this machine or
 * 0.0.0.0 (every address); ports 1025-65535, at most 1000 in one range, never
 * the panel's own port on an address it listens on.
 */
export const command: CliCommand = {
  name: 'allocation:add',
  usage: '--ip IP --ports P[,P-Q...] [--alias NAME]',
  valueOptions: ['ip', 'ports', 'alias'],
  async run(ctx, options) {
    const ip = parseMachineIp(requireOption(options, 'ip'));
    const ports = parsePorts(requireOption(options, 'ports'));
    // A published port is taken before the host sees it: on the panel's own, players would reach a server, and
    // the panel's users would hand a tenant their keys and passwords.
    if (ports.includes(ctx.config.port) && addressesOverlap(ip, ctx.config.host)) {
      throw new CliError(
        `--ports: ${ctx.config.port} is the panel's own port (PORT, on ${ctx.config.host}); an allocation there would take its traffic`,
      );
    }
    const alias = optionalOption(options, 'alias') ?? null;
    if (alias !== null && characters(alias) > ALIAS_MAX) throw new CliError(`--alias must be at most ${ALIAS_MAX} characters`);
    try {
      return { created: await addAllocations(ctx.database.db, { ip, ports, alias, now: ctx.clock.now() }) };
    } catch (err) {
      if (err instanceof AllocationPoolError) throw new CliError(err.message);
      throw err;
    }
  },
};
