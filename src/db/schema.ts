import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

/**
 * Table types. Times are epoch milliseconds (integers on both databases, so
 * ordering and arithmetic are identical); booleans are 0/1 integers for the
 * same reason. JSON members are stored as text.
 */
type Id = Generated<number>;
type Flag = number;
type Millis = number;

export interface UserTable {
  id: Id;
  uuid: string;
  username: string;
  email: string;
  root_admin: Flag;
  use_totp: Flag;
  created_at: Millis;
  /** Migration 007: `scrypt$N$r$p$salt$hash` (src/modules/users/passwords.ts); null: cannot sign in. */
  password: ColumnType<string | null, string | null | undefined, string | null>;
  /** Migration 011 (docs/reference/accounts.md): the TOTP secret encrypted with the app key (src/secrets.ts), null until set up. */
  totp_secret: ColumnType<string | null, string | null | undefined, string | null>;
  totp_authenticated_at: ColumnType<Millis | null, Millis | null | undefined, Millis | null>;
  /** The last 30 s step whose code was accepted: codes of that step or earlier are refused (no replay). */
  totp_last_step: ColumnType<number | null, number | null | undefined, number | null>;
}

export interface ApiKeyTable {
  id: Id;
  user_id: number;
  identifier: string;
  token_hash: string;
  description: string;
  allowed_ips: string;
  last_used_at: Millis | null;
  revoked_at: Millis | null;
  created_at: Millis;
}

export type ServerStatus = 'installing' | 'install_failed' | 'suspended' | 'restoring_backup';

export interface ServerTable {
  id: Id;
  uuid: string;
  uuid_short: string;
  name: string;
  owner_id: number;
  status: ServerStatus | null;
  backup_limit: number;
  startup: string | null;
  stop_command: string | null;
  node: string;
  created_at: Millis;
  updated_at: Millis;
  /**
   * Migration 005: how many changes the panel has begun in the volume (delete_files),
   * how many are in progress, and until when those are presumed alive (a crashed
   * one lapses). See docs/RESTORE.md "One file operation per server".
   */
  volume_changes: Generated<number>;
  volume_changes_in_flight: Generated<number>;
  volume_change_lease_until: ColumnType<Millis | null, Millis | null | undefined, Millis | null>;
  /** Migration 006: limits (docs/reference/containment.md, Pterodactyl's units), 0 = unlimited; pids null = the daemon's default. */
  memory_mib: Generated<number>;
  cpu_percent: Generated<number>;
  disk_mib: Generated<number>;
  pids: ColumnType<number | null, number | null | undefined, number | null>;
  /**
   * Migration 009: the server's uid is SERVER_UID_RANGE's first + uid_slot
   * (unique; assigned at creation). inodes: null = 1 per 4 KiB of disk_mib, 0 = unlimited.
   */
  uid_slot: ColumnType<number | null, number | null | undefined, number | null>;
  inodes: ColumnType<number | null, number | null | undefined, number | null>;
  /** Migration 008 (docs/reference/network-and-allocations.md): the primary allocation (SERVER_IP/SERVER_PORT), and how many allocations its users may hold. */
  allocation_id: ColumnType<number | null, number | null | undefined, number | null>;
  allocation_limit: Generated<number>;
  /** Migration 010 (docs/reference/eggs-and-installs.md): the egg (null = none, a plain startup command), the image (null = `host`), a description. */
  egg_id: ColumnType<number | null, number | null | undefined, number | null>;
  image: ColumnType<string | null, string | null | undefined, string | null>;
  description: Generated<string>;
  /** Migration 011 (docs/reference/accounts.md): how many databases its users may create (0: none). */
  database_limit: Generated<number>;
}

/**
 * An imported egg (migration 010, docs/reference/eggs-and-installs.md). JSON members are text, as the egg
 * file had them: `docker_images` an object of display name → image name,
 * `config_startup` `{done: string | string[]}`, `config_files` Wings' object
 * of file → {parser, find}, `file_denylist` and `features` arrays.
 */
export interface EggTable {
  id: Id;
  uuid: string;
  name: string;
  author: ColumnType<string, string | undefined, string>;
  description: ColumnType<string, string | undefined, string>;
  docker_images: string;
  startup: string;
  config_stop: string | null;
  config_startup: string;
  config_files: string;
  file_denylist: string;
  features: string;
  script_install: ColumnType<string, string | undefined, string>;
  script_container: ColumnType<string, string | undefined, string>;
  script_entrypoint: ColumnType<string, string | undefined, string>;
  created_at: Millis;
  updated_at: Millis;
}

/** One variable of an egg (migration 010): `rules` is Laravel's pipe-separated list (docs/reference/eggs-and-installs.md's subset). */
export interface EggVariableTable {
  id: Id;
  egg_id: number;
  sort: ColumnType<number, number | undefined, number>;
  name: string;
  description: ColumnType<string, string | undefined, string>;
  env_variable: string;
  default_value: ColumnType<string, string | undefined, string>;
  user_viewable: Flag;
  user_editable: Flag;
  rules: ColumnType<string, string | undefined, string>;
  created_at: Millis;
  updated_at: Millis;
}

/** A server's own value of an egg variable (migration 010); absent = the variable's default. */
export interface ServerVariableTable {
  id: Id;
  server_id: number;
  variable_id: number;
  variable_value: string;
  created_at: Millis;
  updated_at: Millis;
}

/** An address and port players reach a server on (migration 008, docs/reference/network-and-allocations.md); free while `server_id` is null. */
export interface AllocationTable {
  id: Id;
  ip: string;
  ip_alias: string | null;
  port: number;
  server_id: number | null;
  notes: string | null;
  created_at: Millis;
  updated_at: Millis;
}

export interface SubuserTable {
  id: Id;
  server_id: number;
  user_id: number;
  permissions: string;
  created_at: Millis;
}

export interface ScheduleTable {
  id: Id;
  server_id: number;
  name: string;
  cron_minute: string;
  cron_hour: string;
  cron_day_of_month: string;
  cron_month: string;
  cron_day_of_week: string;
  is_active: Flag;
  is_processing: Flag;
  only_when_online: Flag;
  last_run_at: Millis | null;
  next_run_at: Millis | null;
  created_at: Millis;
  updated_at: Millis;
  /** Scheduler state (migration 003, docs/SCHEDULER.md). */
  run_requested_at: Millis | null;
  run_number: Generated<number>;
  claimed_by: string | null;
  lease_expires_at: Millis | null;
  run_cursor: number | null;
  run_step_at: Millis | null;
}

export interface TaskTable {
  id: Id;
  schedule_id: number;
  sequence_id: number;
  action: string;
  payload: string;
  time_offset: number;
  is_queued: Flag;
  continue_on_failure: Flag;
  created_at: Millis;
  updated_at: Millis;
}

export interface BackupTable {
  id: Id;
  uuid: string;
  server_id: number;
  name: string;
  ignored_files: string;
  checksum: string | null;
  bytes: ColumnType<number, number | undefined, number>;
  is_successful: Flag;
  is_locked: Flag;
  created_at: Millis;
  completed_at: Millis | null;
  /** The instance writing the archive (migration 005); null before that migration. */
  owner: ColumnType<string | null, string | null | undefined, string | null>;
  lease_expires_at: ColumnType<Millis | null, Millis | null | undefined, Millis | null>;
  /** servers.volume_changes when the backup began (migration 005): any other value at its end fails it. */
  volume_changes_at_start: ColumnType<number | null, number | null | undefined, number | null>;
}

/** A restore in progress (migration 005): one per server, deleted when the status returns to null. */
export interface BackupRestoreTable {
  /** Also names the staging folder beside the volume: `.restore-<id>`. */
  id: string;
  server_id: number;
  backup_id: number;
  truncate: Flag;
  owner: string;
  lease_expires_at: Millis;
  created_at: Millis;
}

export interface ActivityLogTable {
  id: Id;
  server_id: number;
  batch: string | null;
  event: string;
  ip: string | null;
  description: string | null;
  actor_id: number | null;
  api_key_id: number | null;
  properties: string;
  timestamp: Millis;
  /**
   * Listing structures (migration 002, docs/PERFORMANCE.md), written only by
   * modules/activity/activity.recorder.ts: the entry's place in its server's log,
   * and per kind its term and its place in that term's stream.
   */
  seq: number;
  event_term: number;
  event_seq: number;
  ip_term: number;
  ip_seq: number;
  actor_term: number;
  actor_seq: number;
  facet_id: number;
}

/** Per server: the last `seq` handed out and the number of live entries (migration 002). */
export interface ActivityServerTable {
  server_id: number;
  last_seq: number;
  total: number;
  last_timestamp: Millis;
}

/** A server's vocabulary: event names, IPs ('' for none), actors (user id as text, '' for system). */
export interface ActivityTermTable {
  id: Id;
  server_id: number;
  kind: number;
  term: string;
  /** The term in lower case, what filters match against. */
  folded: string;
  last_seq: number;
  total: number;
}

/** Live entry counts per (event, ip, actor) term triple. */
export interface ActivityFacetTable {
  id: Id;
  server_id: number;
  event_term: number;
  ip_term: number;
  actor_term: number;
  total: number;
}

/** A signed-in browser (migration 007). `id` is the SHA-256 (hex) of the cookie's token. */
export interface SessionTable {
  id: string;
  user_id: number;
  csrf_token: string;
  ip: string | null;
  user_agent: string | null;
  created_at: Millis;
  last_seen_at: Millis;
  /** The absolute end, whatever the activity. */
  expires_at: Millis;
}

/** One sign-in attempt in a throttle's bucket (migration 007): an IP's, or an account's. */
export interface LoginAttemptTable {
  id: Id;
  bucket: string;
  attempted_at: Millis;
}

/** A two-factor recovery token (migration 011): only its SHA-256 (hex); deleted when used. */
export interface RecoveryTokenTable {
  id: Id;
  user_id: number;
  token_hash: string;
  created_at: Millis;
}

/** A password sign-in waiting for its second factor (migration 011); `id` is the SHA-256 (hex) of the confirmation token. */
export interface SignInCheckpointTable {
  id: string;
  user_id: number;
  ip: string | null;
  created_at: Millis;
  expires_at: Millis;
}

/** An account's SSH public key for SFTP (migration 011); `fingerprint` is OpenSSH's `SHA256:<base64>`. */
export interface UserSshKeyTable {
  id: Id;
  user_id: number;
  name: string;
  fingerprint: string;
  /** OpenSSH's one-line form: `<type> <base64>`. */
  public_key: string;
  created_at: Millis;
}

/** One event of an account's own (migration 011): `auth:success`, `user:api-key.create`, ... */
export interface UserActivityTable {
  id: Id;
  user_id: number;
  event: string;
  ip: string | null;
  api_key_id: number | null;
  /** JSON object. */
  properties: ColumnType<string, string | undefined, string>;
  timestamp: Millis;
}

export type DatabaseEngine = 'mysql' | 'postgres';

/** A database server the admin registered (migration 011); `password` is encrypted with the app key. */
export interface DatabaseHostTable {
  id: Id;
  name: string;
  engine: DatabaseEngine;
  host: string;
  port: number;
  username: string;
  password: string;
  /** PostgreSQL: the database CREATE DATABASE runs in (null: the server's default, `postgres`). */
  maintenance_db: ColumnType<string | null, string | null | undefined, string | null>;
  /** null: no limit. */
  max_databases: number | null;
  created_at: Millis;
  updated_at: Millis;
}

/** A server's database on a host (migration 011); `password` is encrypted with the app key. */
export interface ServerDatabaseTable {
  id: Id;
  server_id: number;
  database_host_id: number;
  database: string;
  username: string;
  /** Where its user may connect from (`%`: anywhere). */
  remote: ColumnType<string, string | undefined, string>;
  password: string;
  /** 0: the host's default. */
  max_connections: ColumnType<number, number | undefined, number>;
  created_at: Millis;
  updated_at: Millis;
}

/**
 * A server database being created on its host (migration 012): committed before
 * the host's CREATE, deleted with the `server_databases` insert; what a dead
 * instance leaves is dropped on the host by the recovery pass.
 */
export interface DatabaseCreationTable {
  id: Id;
  server_id: number;
  database_host_id: number;
  database: string;
  username: string;
  remote: string;
  /** The creating instance (src/instance.ts). */
  owner: string;
  lease_expires_at: Millis;
  created_at: Millis;
}

/** A number raised on every change to the named table (migration 004), what caches check. */
export interface ChangeGenerationTable {
  name: string;
  generation: number;
}

export interface Tables {
  users: UserTable;
  api_keys: ApiKeyTable;
  servers: ServerTable;
  subusers: SubuserTable;
  schedules: ScheduleTable;
  tasks: TaskTable;
  backups: BackupTable;
  activity_logs: ActivityLogTable;
  activity_servers: ActivityServerTable;
  activity_terms: ActivityTermTable;
  activity_facets: ActivityFacetTable;
  change_generations: ChangeGenerationTable;
  backup_restores: BackupRestoreTable;
  sessions: SessionTable;
  login_attempts: LoginAttemptTable;
  allocations: AllocationTable;
  eggs: EggTable;
  egg_variables: EggVariableTable;
  server_variables: ServerVariableTable;
  recovery_tokens: RecoveryTokenTable;
  sign_in_checkpoints: SignInCheckpointTable;
  user_ssh_keys: UserSshKeyTable;
  user_activity: UserActivityTable;
  database_hosts: DatabaseHostTable;
  server_databases: ServerDatabaseTable;
  database_creations: DatabaseCreationTable;
}

/** A user as the rest of the code sees one: the password hash never travels with it. */
/** The two-factor columns too: src/modules/account reads them where it needs them. */
export type UserRow = Omit<Selectable<UserTable>, 'password' | 'totp_secret' | 'totp_authenticated_at' | 'totp_last_step'>;
export type NewUser = Insertable<UserTable>;
export type ApiKeyRow = Selectable<ApiKeyTable>;
export type ServerRow = Selectable<ServerTable>;
export type NewServer = Insertable<ServerTable>;
export type SubuserRow = Selectable<SubuserTable>;
export type ScheduleRow = Selectable<ScheduleTable>;
export type NewSchedule = Insertable<ScheduleTable>;
export type ScheduleUpdate = Updateable<ScheduleTable>;
export type TaskRow = Selectable<TaskTable>;
export type NewTask = Insertable<TaskTable>;
export type TaskUpdate = Updateable<TaskTable>;
export type BackupRow = Selectable<BackupTable>;
export type NewBackup = Insertable<BackupTable>;
export type BackupRestoreRow = Selectable<BackupRestoreTable>;
export type SessionRow = Selectable<SessionTable>;
export type AllocationRow = Selectable<AllocationTable>;
export type NewAllocation = Insertable<AllocationTable>;
export type EggRow = Selectable<EggTable>;
export type NewEgg = Insertable<EggTable>;
export type EggVariableRow = Selectable<EggVariableTable>;
export type NewEggVariable = Insertable<EggVariableTable>;
export type ServerVariableRow = Selectable<ServerVariableTable>;
export type ActivityLogRow = Selectable<ActivityLogTable>;
export type NewActivityLog = Insertable<ActivityLogTable>;
export type UserSshKeyRow = Selectable<UserSshKeyTable>;
export type UserActivityRow = Selectable<UserActivityTable>;
export type DatabaseHostRow = Selectable<DatabaseHostTable>;
export type ServerDatabaseRow = Selectable<ServerDatabaseTable>;
