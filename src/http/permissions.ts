/** Subuser permissions (SPEC 5). Owners and root admins hold all of them. */
export const PERMISSIONS = [
  'schedule.read',
  'schedule.create',
  'schedule.update',
  'schedule.delete',
  'activity.read',
  'backup.read',
  'backup.create',
  'backup.delete',
  'backup.download',
  'backup.restore',
  'control.console',
  'control.start',
  'control.stop',
  'control.restart',
  // SPEC 15: a server's files (Pterodactyl's names).
  'file.create',
  'file.read',
  'file.read-content',
  'file.update',
  'file.delete',
  'file.archive',
  'file.sftp',
  'websocket.connect',
  // SPEC 13: a server's allocations (Pterodactyl's names).
  'allocation.read',
  'allocation.create',
  'allocation.update',
  'allocation.delete',
] as const;

export type Permission = (typeof PERMISSIONS)[number];

export function isPermission(value: string): value is Permission {
  return (PERMISSIONS as readonly string[]).includes(value);
}

/** What one user may do on one server. */
export interface Access {
  readonly isOwnerOrAdmin: boolean;
  readonly permissions: ReadonlySet<string>;
}

export function can(access: Access, permission: Permission): boolean {
  return access.isOwnerOrAdmin || access.permissions.has(permission);
}

export type PowerSignal = 'start' | 'stop' | 'restart' | 'kill';

/** The permission a power signal needs, by hand or in a task (`kill` needs `control.stop`). */
export function permissionForSignal(signal: PowerSignal): Permission {
  switch (signal) {
    case 'start':
      return 'control.start';
    case 'stop':
    case 'kill':
      return 'control.stop';
    case 'restart':
      return 'control.restart';
  }
}
