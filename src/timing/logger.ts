/** The part of a pino logger the scheduler uses (pino's and Fastify's loggers both fit). */
export interface SchedulerLogger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export const silentLogger: SchedulerLogger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
};
