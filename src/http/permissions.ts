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
  // SPEC 15: files and SFTP (Pterodactyl's names).
  'file.read',
  'file.read-content',
  'file.create',
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
  // SPEC 16: startup variables, image and settings (Pterodactyl's names).
  'startup.read',
  'startup.update',
  'startup.docker-image',
  'settings.rename',
  'settings.reinstall',
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

/**
 * What a caller wants to do on a server, as the one access policy
 * (src/modules/servers/access-policy.ts) weighs it for HTTP routes, websocket
 * actions, SFTP operations and signed URLs alike.
 */
export interface ServerAction {
  /** null: anyone who can see the server. */
  permission: Permission | null;
  /** At least one of these (the exact one depends on the body, checked in the handler). */
  permissionAnyOf?: readonly Permission[];
  /** Changes something: refused while the server installs or failed to install. */
  mutates: boolean;
  /** Also refused while a backup is being restored (SPEC 6). */
  blockedDuringRestore?: boolean;
  /** Allowed for a suspended server (only GET /servers/{server}). */
  allowedWhenSuspended?: boolean;
}

/**
 * Why the policy refused: the server is not visible to the caller (404), a
 * permission is missing (403), or the server's status forbids it now (409;
 * `status` says which, for callers that treat suspension apart). `message`
 * is Pterodactyl's sentence (null: the default for the status code).
 */
export type AccessRefusal =
  | { kind: 'not-found' }
  | { kind: 'forbidden'; message: null }
  | { kind: 'conflict'; status: 'suspended' | 'installing' | 'restoring'; message: string };

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
