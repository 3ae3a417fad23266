import { startService } from '../../main.js';
import { stopRequested, type ServiceCommand } from './service.js';

/**
 * `worker`: only the scheduler, for extra instances next to API instances that
 * run with SCHEDULER=off. Running the scheduler is its whole purpose, so it
 * ignores SCHEDULER (a shared `.env` may well say off).
 */
export const command: ServiceCommand = {
  name: 'worker',
  usage: '(runs only the scheduler until stopped)',
  valueOptions: [],
  service: true,
  async run(ctx, _options, stop) {
    const service = await startService(ctx, { api: false, scheduler: true });
    await stopRequested(stop);
    ctx.logger.info('shutting down');
    await service.stop();
    ctx.logger.info('stopped');
  },
};
