import { CliError, requireOption, type CliCommand, type CliOptions } from '../command.js';
import type { ServerLimits } from '../../daemon/daemon.js';
import { COMMAND_MAX_BYTES } from '../../modules/tasks/tasks.rules.js';
import { createServer } from '../../modules/servers/servers.service.js';
import { characters, optionalOption, requireUser } from './lookups.js';
import {
  AllocationUnavailableError,
  assertInitialAllocationAvailable,
  assignInitialAllocation,
} from '../../modules/allocations/allocations.service.js';
import { parseAllocationChoice, parseAllocationLimit, parseDatabaseLimit } from './allocation-options.js';
import { updateServerSettings } from '../../modules/settings/settings.repository.js';
import { EggServerError, planEggServer, saveEggServerVariables, type EggServerPlan } from '../../modules/eggs/egg-servers.js';
import { installServer } from '../../modules/installs/install.service.js';
import { openInstallDaemon } from './install-daemon.js';

const MAX_BACKUP_LIMIT = 2_147_483_647;

export function parseBackupLimit(value: string | undefined): number {
  if (value === undefined) return 10;
  if (!/^\d+$/.test(value) || Number(value) > MAX_BACKUP_LIMIT) {
    throw new CliError(`--backup-limit must be a whole number from 0 to ${MAX_BACKUP_LIMIT}, got "${value}"`);
  }
  return Number(value);
}

/** The largest value each limit flag takes (docs/reference/containment.md, Pterodactyl's units; 0 = unlimited). */
const LIMIT_FLAGS = {
  memory: { max: 2_147_483_647, unit: 'MiB' },
  cpu: { max: 100_000, unit: 'percent of one core' },
  disk: { max: 2_147_483_647, unit: 'MiB' },
  // Linux's pid_max ceiling: no cgroup can hold more.
  pids: { max: 4_194_304, unit: 'processes' },
  inodes: { max: 2_147_483_647, unit: 'files, folders and links' },
} as const;

export function parseLimitFlag(flag: keyof typeof LIMIT_FLAGS, value: string): number {
  const { max, unit } = LIMIT_FLAGS[flag];
  if (!/^\d+$/.test(value) || Number(value) > max) {
    throw new CliError(`--${flag} must be a whole number from 0 to ${max} (${unit}, 0 = unlimited), got "${value}"`);
  }
  return Number(value);
}

/**
 * --memory, --cpu and --disk default to 0 (unlimited); --pids to null, the daemon's default (512 when
 * confined); --inodes to null, 1 per 4 KiB of the disk limit (docs/reference/containment.md).
 */
export function parseLimits(options: {
  memory?: string;
  cpu?: string;
  disk?: string;
  pids?: string;
  inodes?: string;
}): ServerLimits {
  const orZero = (flag: 'memory' | 'cpu' | 'disk') => {
    const value = options[flag];
    return value === undefined ? 0 : parseLimitFlag(flag, value);
  };
  return {
    memoryMiB: orZero('memory'),
    cpuPercent: orZero('cpu'),
    diskMiB: orZero('disk'),
    pids: options.pids === undefined ? null : parseLimitFlag('pids', options.pids),
    ...(options.inodes === undefined ? {} : { inodes: parseLimitFlag('inodes', options.inodes) }),
  };
}

/** A line the daemon writes to the process's standard input: the same rule as a console command. */
export function checkStopCommand(line: string | undefined): void {
  if (line === undefined) return;
  if (/[\r\n]/.test(line)) throw new CliError('--stop-command must be a single line');
  if (Buffer.byteLength(line, 'utf8') > COMMAND_MAX_BYTES)
    throw new CliError(`--stop-command must be at most ${COMMAND_MAX_BYTES} bytes`);
}

/** An allocation that cannot be given, an egg's refusal: the admin's mistake, its reason, not a stack. */
function asCliError(err: unknown): never {
  throw err instanceof AllocationUnavailableError || err instanceof EggServerError ? new CliError(err.message) : err;
}

function parseEggId(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,9}$/.test(value)) throw new CliError(`--egg must be an egg's id (egg:list), got "${value}"`);
  return Number(value);
}

function variableOptions(options: CliOptions): string[] {
  const value = options['variable'];
  if (value === undefined) return [];
  return Array.isArray(value) ? [...(value as readonly string[])] : [String(value)];
}

/**
 * `server:create --owner USER --name N [--startup CMD] [--stop-command LINE] [--backup-limit N]
 * [--memory MiB] [--cpu PERCENT] [--disk MiB] [--pids N] [--inodes N]` (docs/reference/cli.md). Without --startup the
 * server has a volume but no process. Limits are Pterodactyl's units (cpu 100 = one core),
 * 0 = unlimited; without --pids the daemon chooses (512 when confined).
 * `--allocation IP:PORT|auto` (docs/reference/network-and-allocations.md): its primary allocation; auto (the default) takes the first free
 * one, none when none is free; `--allocation-limit N` how many its users may hold (default 0).
 * `--egg ID [--image NAME] [--variable KEY=VALUE ...]` (docs/reference/eggs-and-installs.md): a server made from an egg (its startup
 * unless --startup, its stop command unless --stop-command, the image its first unless --image, every
 * variable checked by its rules with the defaults filled in), then installed (the egg's script); waits for
 * the install and prints `status` too. Rows in one transaction: a refused variable leaves nothing.
 * A SIGKILL after that commit and before the install claimed the server leaves a server never installed,
 * status null: `server:reinstall` runs its install.
 */
export const command: CliCommand = {
  name: 'server:create',
  usage:
    '--owner USER --name N [--startup CMD] [--stop-command LINE] [--backup-limit N] [--memory MiB] [--cpu PERCENT] [--disk MiB] [--pids N]' +
    ' [--inodes N] [--allocation IP:PORT|auto] [--allocation-limit N] [--database-limit N] [--egg ID [--image NAME] [--variable KEY=VALUE ...]]',
  valueOptions: [
    'owner',
    'name',
    'startup',
    'stop-command',
    'backup-limit',
    'memory',
    'cpu',
    'disk',
    'pids',
    'inodes',
    'allocation',
    'allocation-limit',
    'database-limit',
    'egg',
    'image',
  ],
  repeatableOptions: ['variable'],
  async run(ctx, options) {
    const ownerReference = requireOption(options, 'owner');
    const name = requireOption(options, 'name');
    if (characters(name) > 191) throw new CliError('--name must be at most 191 characters');
    const startup = optionalOption(options, 'startup');
    const stopCommand = optionalOption(options, 'stop-command');
    checkStopCommand(stopCommand);
    const backupLimit = parseBackupLimit(optionalOption(options, 'backup-limit'));
    const limits = parseLimits({
      memory: optionalOption(options, 'memory'),
      cpu: optionalOption(options, 'cpu'),
      disk: optionalOption(options, 'disk'),
      pids: optionalOption(options, 'pids'),
      inodes: optionalOption(options, 'inodes'),
    });
    const allocation = parseAllocationChoice(optionalOption(options, 'allocation') ?? 'auto');
    const allocationLimit = parseAllocationLimit(optionalOption(options, 'allocation-limit'));
    const databaseLimitOption = optionalOption(options, 'database-limit');
    const databaseLimit = databaseLimitOption === undefined ? 0 : parseDatabaseLimit(databaseLimitOption);

    const eggId = parseEggId(optionalOption(options, 'egg'));
    const image = optionalOption(options, 'image');
    const variables = variableOptions(options);
    if (eggId === undefined && (image !== undefined || variables.length > 0)) {
      throw new CliError('--image and --variable need --egg');
    }

    const db = ctx.database.db;
    const owner = await requireUser(db, ownerReference);
    await assertInitialAllocationAvailable(db, allocation).catch(asCliError);
    const plan: EggServerPlan | undefined =
      eggId === undefined ? undefined : await planEggServer(db, ctx.daemon.images, eggId, { image, variables }).catch(asCliError);
    // The row and its volume together: a volume that cannot be made leaves no server behind.
    const server = await db
      .transaction()
      .execute(async (trx) => {
        const row = await createServer(trx, ctx.daemon, {
          ownerId: owner.id,
          name,
          startup: startup ?? plan?.startup ?? null,
          stopCommand: stopCommand ?? plan?.stopCommand ?? null,
          backupLimit,
          limits,
          allocationLimit,
          eggId: plan?.egg.id ?? null,
          image: plan?.image ?? null,
          now: ctx.clock.now(),
        });
        if (databaseLimit > 0) await updateServerSettings(trx, row.id, { database_limit: databaseLimit }, ctx.clock.now());
        if (plan) await saveEggServerVariables(trx, row.id, plan, ctx.clock.now());
        // In the same transaction: an allocation that cannot be given leaves no server behind.
        await assignInitialAllocation(trx, row, allocation, ctx.clock.now());
        return row;
      })
      .catch(asCliError);
    const created = { uuid: server.uuid, identifier: server.uuid_short, name: server.name };
    if (!plan) return created;
    const daemon = await openInstallDaemon(ctx.config);
    try {
      const { status } = await installServer({ db, daemon, clock: ctx.clock }, server.id, { reinstall: false });
      return { ...created, status };
    } finally {
      await daemon.close();
    }
  },
};
