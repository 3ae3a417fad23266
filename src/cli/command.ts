import type { Config } from '../config.js';
import type { DatabaseHandle } from '../db/database.js';
import type { LocalDaemon } from '../daemon/local/local-daemon.js';
import type { Clock } from '../clock.js';

/** What every admin command gets: the service's configuration, its (migrated) database and its daemon. */
export interface CliContext {
  config: Config;
  database: DatabaseHandle;
  daemon: LocalDaemon;
  clock: Clock;
  /** Reads one line of standard input (`prompt` is shown on a terminal); the process's by default (src/cli/stdin.ts). */
  readStdinLine?: (prompt: string) => Promise<string>;
}

/** Parsed `--name value` / `--flag` options; a repeatable option's values in the order given. */
export type CliOptions = Record<string, string | true | readonly string[]>;

/** A usage error or a failure: exit 1, the message on standard error, nothing on standard output. */
export class CliError extends Error {}

export interface CliCommand {
  name: string;
  /** One line, e.g. "--server S [--name N]". */
  usage: string;
  /** Options that take a value, and boolean flags; anything else is a usage error. */
  valueOptions: readonly string[];
  flagOptions?: readonly string[];
  /** Value options that may be given more than once (`--variable A=1 --variable B=2`): an array, even of one. */
  repeatableOptions?: readonly string[];
  /** Returns the object printed with --json (and summarised for humans without it). */
  run(ctx: CliContext, options: CliOptions): Promise<Record<string, unknown>>;
  /** What is printed without --json, when one `name: value` line per member would not read well (a list). */
  summary?(result: Record<string, unknown>): string;
}

export function requireOption(options: CliOptions, name: string): string {
  const value = options[name];
  if (typeof value !== 'string' || value.trim() === '') throw new CliError(`--${name} is required`);
  return value.trim();
}
