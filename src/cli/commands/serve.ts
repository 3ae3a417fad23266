import { adminCommandEnv } from '../admin-env.js';
import { bootstrapFirstStart, initialKeyAnnouncement, writeInitialKeyFile, type InitialCredentials } from '../../bootstrap.js';
import { startService, type RunningService } from '../../main.js';
import { stopRequested, type ServiceCommand } from './service.js';

/**
 * `serve` (what `npm start` runs): the API on HOST:PORT and, unless
 * SCHEDULER=off, the scheduler; on an empty database, first creates the admin,
 * the demo server and a key (QUETZAL_BOOTSTRAP=off disables that).
 */
export const command: ServiceCommand = {
  name: 'serve',
  usage: '(runs the API and the scheduler until stopped)',
  valueOptions: [],
  service: true,
  async run(ctx, _options, stop) {
    let initial: { credentials: InitialCredentials; file: string } | undefined;
    if (ctx.config.bootstrap) {
      const credentials = await bootstrapFirstStart({
        db: ctx.database.db,
        dialect: ctx.database.dialect,
        daemon: ctx.daemon,
        clock: ctx.clock,
      });
      if (credentials) {
        initial = { credentials, file: writeInitialKeyFile(ctx.config.dataDir, credentials.token) };
        ctx.logger.info(
          { user: credentials.username, server: credentials.serverIdentifier, file: initial.file },
          'first start: admin, server and key created',
        );
      }
    }

    let service: RunningService;
    try {
      service = await startService(ctx, { api: true, scheduler: ctx.config.scheduler });
    } catch (err) {
      if (initial)
        process.stdout.write(
          initialKeyAnnouncement(initial.credentials, ctx.config.appUrl, initial.file, adminCommandEnv(ctx.config)),
        );
      throw err;
    }
    if (initial)
      process.stdout.write(
        initialKeyAnnouncement(initial.credentials, service.url ?? ctx.config.appUrl, initial.file, adminCommandEnv(ctx.config)),
      );
    if (!ctx.config.scheduler) ctx.logger.info('SCHEDULER=off: this instance runs no schedules');

    await stopRequested(stop);
    ctx.logger.info('shutting down');
    await service.stop();
    ctx.logger.info('stopped');
  },
};
