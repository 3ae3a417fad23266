import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../../deps.js';
import { clientRoute } from '../../http/routes.js';
import { item, paginatedList } from '../../http/envelopes.js';
import { parsePageQuery } from '../../http/query.js';
import { BackupListQuery, CreateBackupBody, RestoreBackupBody } from './backups.schemas.js';
import { restoreBackup } from './backups.restore.js';
import { deleteBackup, listBackups, requestBackup, toggleLock } from './backups.service.js';
import { backupItem } from './backups.transformer.js';
import { backupDownloadUrl } from './backups.download.js';

export function registerBackupRoutes(app: FastifyInstance, deps: AppDeps & { appKey: Buffer }) {
  clientRoute(app, {
    method: 'GET',
    url: '/servers/:server/backups',
    summary: "List a server's backups, newest first",
    permission: 'backup.read',
    querystring: BackupListQuery,
    handler: async (request) => {
      const page = parsePageQuery(request.query, { defaultPerPage: 20, maxPerPage: 50 });
      const { rows, total, backupCount } = await listBackups(deps.db, request.target.server, page);
      // Pterodactyl's clients show "n of limit" from backup_count: backups that did not fail.
      return paginatedList(
        rows.map(backupItem),
        { total, ...page },
        { url: request.url, baseUrl: deps.config.appUrl },
        { backup_count: backupCount },
      );
    },
  });

  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/backups',
    summary: 'Start a backup (answers at once; the archive is written in the background)',
    permission: 'backup.create',
    mutates: true,
    blockedDuringRestore: true,
    body: CreateBackupBody,
    handler: async (request) => {
      const { server, access } = request.target;
      return backupItem(await requestBackup(deps, server, access, request.auth.actor, request.body));
    },
  });

  clientRoute(app, {
    method: 'GET',
    url: '/servers/:server/backups/:backup',
    summary: 'Show one backup',
    permission: 'backup.read',
    handler: async (request) => backupItem(request.target.backup),
  });

  clientRoute(app, {
    method: 'DELETE',
    url: '/servers/:server/backups/:backup',
    summary: 'Delete a backup and its archive',
    permission: 'backup.delete',
    mutates: true,
    blockedDuringRestore: true,
    handler: async (request, reply) => {
      await deleteBackup(deps, request.target.server, request.target.backup, request.auth.actor);
      return reply.status(204).send();
    },
  });

  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/backups/:backup/lock',
    summary: 'Lock or unlock a backup (toggles)',
    permission: 'backup.delete',
    mutates: true,
    handler: async (request) =>
      backupItem(await toggleLock(deps, request.target.server, request.target.backup, request.auth.actor)),
  });

  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/backups/:backup/restore',
    summary: 'Restore a backup over the server volume (answers 204 at once; runs in the background)',
    permission: 'backup.restore',
    mutates: true,
    blockedDuringRestore: true,
    body: RestoreBackupBody,
    handler: async (request, reply) => {
      const { server, backup } = request.target;
      await restoreBackup(deps, server, backup, request.auth.actor, request.body);
      return reply.status(204).send();
    },
  });

  clientRoute(app, {
    method: 'GET',
    url: '/servers/:server/backups/:backup/download',
    summary: "A signed URL (15 minutes) that downloads the backup's archive",
    permission: 'backup.download',
    handler: async (request) => {
      const { server, backup } = request.target;
      return item('signed_url', { url: await backupDownloadUrl(deps, server, backup, request.auth.user, request.auth.actor) });
    },
  });
}
