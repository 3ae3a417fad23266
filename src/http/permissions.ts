/**
 * Subuser permissions (docs/reference/authentication.md, docs/reference/accounts.md): Pterodactyl's complete set, by group, with
 * what each allows (in Quetzal's words). The one source of truth: the
 * permission checks, GET /api/client/permissions and the web console's picker
 * all read it. Owners and root admins hold every one.
 */
export const PERMISSION_GROUPS = {
  websocket: {
    description: "Connecting to the server's live console: its output and its live figures.",
    keys: { connect: "Open the server's websocket to follow the console and its figures." },
  },
  control: {
    description: 'Power actions and console commands.',
    keys: {
      console: 'Send commands to the server through the console.',
      start: 'Start the server when it is stopped.',
      stop: 'Stop (or kill) the server when it runs.',
      restart: 'Restart the server; this also starts it when it is offline, but never leaves it stopped.',
    },
  },
  user: {
    description:
      "Managing the server's other subusers. Nobody may change their own subuser account or grant a permission they do not hold.",
    keys: {
      create: 'Add subusers to the server.',
      read: 'See the subusers and their permissions.',
      update: "Change other subusers' permissions.",
      delete: 'Remove subusers from the server.',
    },
  },
  file: {
    description: "Working with the server's files.",
    keys: {
      create: 'Create files and folders, by hand or by upload.',
      read: 'List folders, without reading or downloading files.',
      'read-content': "Read a file's contents; this includes downloading it.",
      update: 'Change existing files and folders.',
      delete: 'Delete files and folders.',
      archive: 'Compress folders and decompress archives.',
      sftp: 'Connect over SFTP, with the other file permissions deciding what is allowed there.',
    },
  },
  backup: {
    description: "Making and managing the server's backups.",
    keys: {
      create: 'Make new backups.',
      read: "List the server's backups.",
      delete: 'Delete backups.',
      download: 'Download a backup; a backup holds every file of the server.',
      restore: 'Restore a backup; this can replace or delete every file of the server.',
    },
  },
  allocation: {
    description: "The server's network allocations (ports).",
    keys: {
      read: 'See every allocation of the server (anyone with access sees its primary one).',
      create: 'Give the server more allocations.',
      update: 'Choose the primary allocation and write notes on allocations.',
      delete: 'Remove allocations from the server.',
    },
  },
  startup: {
    description: "The server's startup settings.",
    keys: {
      read: "See the server's startup variables.",
      update: "Change the server's startup variables.",
      'docker-image': 'Choose the image the server runs on.',
    },
  },
  database: {
    description: "The server's databases.",
    keys: {
      create: 'Create databases for the server.',
      read: "See the server's databases.",
      update: "Rotate a database's password (it is shown only with view_password).",
      delete: 'Delete databases.',
      view_password: "See a database's password.",
    },
  },
  schedule: {
    description: "The server's schedules and their tasks.",
    keys: {
      create: 'Create schedules.',
      read: 'See schedules and their tasks.',
      update: 'Change, run, enable and disable schedules and their tasks.',
      delete: 'Delete schedules.',
    },
  },
  settings: {
    description: "The server's settings.",
    keys: {
      rename: 'Rename the server and change its description.',
      reinstall: 'Reinstall the server.',
    },
  },
  activity: {
    description: "The server's activity log.",
    keys: { read: "Read the server's activity log." },
  },
} as const;

type Groups = typeof PERMISSION_GROUPS;

/** Every permission key, `group.key`. */
export type Permission = { [G in keyof Groups]: `${G}.${keyof Groups[G]['keys'] & string}` }[keyof Groups];

export const PERMISSIONS: readonly Permission[] = Object.entries(PERMISSION_GROUPS).flatMap(([group, { keys }]) =>
  Object.keys(keys).map((key) => `${group}.${key}` as Permission),
);

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
  /** Also refused while a backup is being restored (docs/reference/servers.md#status). */
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
