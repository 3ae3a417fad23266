import type { Logger } from 'pino';
import type { CliContext, CliOptions } from '../command.js';

/** What a long-running command gets: an admin command's context and a logger (to standard output). */
export interface ServiceContext extends CliContext {
  logger: Logger;
}

/**
 * A command that runs until stopped (`serve`, `worker`): no JSON result, logs
 * allowed on standard output. `stop` fires on SIGINT/SIGTERM; `run` resolves
 * once everything shut down gracefully.
 */
export interface ServiceCommand {
  name: string;
  usage: string;
  valueOptions: readonly string[];
  flagOptions?: readonly string[];
  readonly service: true;
  run(ctx: ServiceContext, options: CliOptions, stop: AbortSignal): Promise<void>;
}

/** Resolves when `signal` aborts. */
export function stopRequested(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}
