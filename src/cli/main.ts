import fs from 'node:fs/promises';
import pino, { type Logger } from 'pino';
import { systemClock, type Clock } from '../clock.js';
import { ConfigError, loadConfig, readEnvironment, type Config } from '../config.js';
import {
  ContainmentUnavailableError,
  resolveContainment,
  type ContainerRuntime,
} from '../daemon/local/container/container-runtime.js';
import { LocalDaemon } from '../daemon/local/local-daemon.js';
import { openDatabase, type DatabaseHandle } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { PRIVATE_DIR_MODE, preparePrivateDataDir } from '../private-files.js';
import { CliError, type CliCommand, type CliContext, type CliOptions } from './command.js';
import { commandHelp, COMMAND_HELP } from './help.js';
import { COMMANDS, isServiceCommand } from './commands/index.js';
import { containmentOptions } from './commands/install-daemon.js';
import type { ServiceCommand, ServiceContext } from './commands/service.js';

/**
 * `quetzal <command> [--option value | --option=value] [--flag] [--json]`
 * (docs/reference/cli.md). With --json, exactly one JSON object on
 * standard output; on any failure, nothing on standard output, one line on
 * standard error and exit status 1. Logs of admin commands go to standard
 * error; `serve` and `worker` log to standard output like any service.
 */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
}

export interface RunCliOptions {
  io?: CliIo;
  env?: Record<string, string | undefined>;
  /** Stops `serve`/`worker`; by default SIGINT or SIGTERM does. */
  stop?: AbortSignal;
  clock?: Clock;
  /** Standard input's first line, for commands that read one (user:password); the process's by default. */
  readStdinLine?: (prompt: string) => Promise<string>;
}

const processIo: CliIo = {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
};

/** A mistake in how the command was called: the usage line is worth showing. */
class UsageError extends CliError {}

/** Runs one command line; resolves to the exit status. Never throws. */
export async function runCli(argv: readonly string[], opts: RunCliOptions = {}): Promise<number> {
  const io = opts.io ?? processIo;
  const [name, ...rest] = argv;
  if (name === undefined || name === '') {
    io.stderr(await usage());
    return 1;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    io.stdout(await usage());
    return 0;
  }
  let command: CliCommand | ServiceCommand | undefined;
  try {
    const load = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
    if (!load) throw new UsageError(`unknown command "${name}" (quetzal --help lists them)`);
    command = await load();
    const parsed = parseArguments(command, rest);
    if (parsed.help) {
      io.stdout(commandHelp(command));
      return 0;
    }
    if (isServiceCommand(command)) {
      await runService(command, parsed.options, opts);
      return 0;
    }
    const result = await runAdminCommand(command, parsed.options, opts);
    io.stdout(parsed.json ? `${JSON.stringify(result)}\n` : (command.summary?.(result) ?? humanSummary(result)));
    return 0;
  } catch (err) {
    let reason = reasonOf(err);
    if (err instanceof UsageError && command) reason += ` (usage: quetzal ${command.name} ${command.usage})`.replace(/ \)$/, ')');
    io.stderr(`quetzal: ${reason}\n`);
    return 1;
  }
}

interface ParsedArguments {
  options: CliOptions;
  json: boolean;
  help: boolean;
}

export function parseArguments(
  command: Pick<CliCommand, 'valueOptions' | 'flagOptions' | 'repeatableOptions'>,
  args: readonly string[],
): ParsedArguments {
  const options: CliOptions = {};
  let json = false;
  let help = false;
  for (let i = 0; i < args.length; i++) {
    const token = args[i]!;
    if (token === '-h') {
      help = true;
      continue;
    }
    if (!token.startsWith('--') || token === '--') throw new UsageError(`unexpected argument "${token}"`);
    const eq = token.indexOf('=');
    const name = eq === -1 ? token.slice(2) : token.slice(2, eq);
    let value = eq === -1 ? undefined : token.slice(eq + 1);
    if (name === 'json' || name === 'help' || command.flagOptions?.includes(name)) {
      if (value !== undefined) throw new UsageError(`--${name} takes no value`);
      if (name === 'json') json = true;
      else if (name === 'help') help = true;
      else options[name] = true;
      continue;
    }
    const repeatable = command.repeatableOptions?.includes(name) === true;
    if (!command.valueOptions.includes(name) && !repeatable) throw new UsageError(`unknown option --${name}`);
    if (value === undefined) {
      const next = args[i + 1];
      // `--name --json` is a forgotten value, not a name; `--name=--x` passes one that starts with dashes.
      if (next === undefined || next.startsWith('--')) throw new UsageError(`--${name} needs a value`);
      value = next;
      i++;
    }
    if (repeatable) {
      const earlier = options[name];
      options[name] = [...(Array.isArray(earlier) ? (earlier as readonly string[]) : []), value];
      continue;
    }
    if (Object.hasOwn(options, name)) throw new UsageError(`--${name} given twice`);
    options[name] = value;
  }
  return { options, json, help };
}

/** Configuration, database (migrated) and daemon: what every command works on. */
async function openContext(
  opts: RunCliOptions,
  service: boolean,
): Promise<{ config: Config; database: DatabaseHandle; logger: Logger }> {
  let config: Config;
  try {
    config = loadConfig(opts.env ? readEnvironment(process.cwd(), opts.env) : readEnvironment());
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(`configuration: ${err.message}`);
    throw err;
  }
  // Admin commands keep standard output for their result.
  const logger = service
    ? pino({ level: config.logLevel })
    : pino({ level: config.logLevel }, pino.destination({ dest: 2, sync: true }));
  // Before the database: a SQLite file inside DATA_DIR is created in the private folder.
  const dataDirChanges = preparePrivateDataDir(config.dataDir);
  const database = openDatabase(config.databaseUrl, {
    poolSize: service ? 10 : 2,
    ...searchPathOption(config.databaseUrl),
  });
  try {
    await migrateToLatest(database);
  } catch (err) {
    await database.close().catch(() => {});
    throw err;
  }
  const modeChanges = [...dataDirChanges, ...(database.modeChanges ?? [])];
  if (modeChanges.length > 0)
    logger.info({ modeChanges }, "tightened the modes of the service's own files (docs/reference/containment.md)");
  return { config, database, logger };
}

/**
 * A PostgreSQL URL may pin its schema (`?options=-c search_path=s`). Passing it on
 * lets migrations keep their bookkeeping in that schema, not look in every one.
 */
export function searchPathOption(url: string): { searchPath?: string } {
  if (!/^postgres(ql)?:\/\//.test(url)) return {};
  let options: string | null;
  try {
    options = new URL(url).searchParams.get('options');
  } catch {
    return {};
  }
  const match = options ? /(?:^|\s)(?:-c\s*|--)search_path=([A-Za-z_][A-Za-z0-9_$]*)(?=\s|$)/.exec(options) : null;
  return match ? { searchPath: match[1]! } : {};
}

async function runAdminCommand(command: CliCommand, options: CliOptions, opts: RunCliOptions): Promise<Record<string, unknown>> {
  const { config, database, logger } = await openContext(opts, false);
  const daemon = new LocalDaemon(config.dataDir, { logger, consoleLogBytes: config.consoleLogMb * 1024 * 1024 });
  try {
    // Not daemon.start(): that would take over processes that a running service owns.
    await Promise.all(Object.values(daemon.paths).map((dir) => fs.mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE })));
    const ctx: CliContext = {
      config,
      database,
      daemon,
      clock: opts.clock ?? systemClock,
      ...(opts.readStdinLine ? { readStdinLine: opts.readStdinLine } : {}),
    };
    return await command.run(ctx, options);
  } finally {
    await daemon.close().catch((err: unknown) => logger.warn({ err }, 'daemon did not close cleanly'));
    await database.close().catch(() => {});
  }
}

async function runService(command: ServiceCommand, options: CliOptions, opts: RunCliOptions): Promise<void> {
  const { config, database, logger } = await openContext(opts, true);
  let containers: ContainerRuntime | null;
  try {
    containers = await resolveContainment(containmentOptions(config), logger);
  } catch (err) {
    await database.close().catch(() => {});
    if (err instanceof ContainmentUnavailableError) throw new CliError(err.message);
    throw err;
  }
  logger.info(
    {
      containment: containers ? 'on' : 'off',
      ...(containers ? { serverUid: containers.uid, serverUidRange: containers.uidRange } : {}),
    },
    containers ? 'server processes run in containers' : 'server processes run unconfined',
  );
  const daemon = new LocalDaemon(config.dataDir, {
    logger,
    consoleLogBytes: config.consoleLogMb * 1024 * 1024,
    containers,
    serversOnShutdown: config.serversOnShutdown,
  });
  const stop = opts.stop ?? stopOnSignals(logger);
  try {
    const ctx: ServiceContext = { config, database, daemon, clock: opts.clock ?? systemClock, logger };
    await command.run(ctx, options, stop);
  } finally {
    await database.close().catch((err: unknown) => logger.warn({ err }, 'database did not close cleanly'));
    logger.flush();
  }
}

/**
 * SIGINT/SIGTERM request a graceful stop; a second one ends the process at once.
 * A repeat within a second is the same request delivered twice, not a second
 * one: Ctrl-C reaches the terminal's whole foreground group (npm and this
 * process) and npm forwards its copy; a process manager that signals every
 * process of the service does the same through npm.
 */
function stopOnSignals(logger: Logger): AbortSignal {
  const controller = new AbortController();
  let requestedAt = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    if (!controller.signal.aborted) {
      requestedAt = performance.now();
      logger.info({ signal }, 'stopping gracefully (send it again to stop at once)');
      controller.abort();
      return;
    }
    if (performance.now() - requestedAt < 1000) return;
    logger.warn({ signal }, 'stopping at once');
    logger.flush();
    process.exit(1);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return controller.signal;
}

function reasonOf(err: unknown): string {
  let message = '';
  if (err instanceof AggregateError && err.errors.length > 0) message = reasonOf(err.errors[0]);
  else if (err instanceof Error) message = err.message || (err as NodeJS.ErrnoException).code || err.name;
  else message = String(err);
  return message.replace(/\s*\n\s*/g, ' ').trim() || 'failed';
}

/** Without --json: one `name: value` line per member. */
function humanSummary(result: Record<string, unknown>): string {
  const entries = Object.entries(result);
  const width = Math.max(0, ...entries.map(([key]) => key.length));
  return entries
    .map(([key, value]) => {
      const shown = typeof value === 'string' ? value : Array.isArray(value) ? value.join(', ') : JSON.stringify(value);
      return `${`${key}:`.padEnd(width + 1)} ${shown}\n`;
    })
    .join('');
}

async function usage(): Promise<string> {
  const lines = ['usage: quetzal <command> [options] [--json]', '', 'commands:'];
  const commands = await Promise.all(Object.values(COMMANDS).map((load) => load()));
  const width = Math.max(...commands.map((c) => c.name.length));
  for (const command of commands) {
    // The options, then what it does; a command without options: only what it does.
    const summary = COMMAND_HELP[command.name]?.summary;
    const takesOptions = command.usage !== '' && !command.usage.startsWith('(');
    lines.push(`  ${command.name.padEnd(width)}  ${takesOptions || !summary ? command.usage : summary}`.trimEnd());
    if (summary && takesOptions) lines.push(`  ${' '.repeat(width)}    ${summary}`);
  }
  lines.push(
    '',
    '`quetzal <command> --help` shows its options.',
    'USER is a username, email or UUID; S is a server UUID or 8-character short identifier.',
    '--json prints exactly one JSON object on standard output. Configuration comes from the',
    'environment and ./.env (see .env.example).',
    '',
  );
  return lines.join('\n');
}
