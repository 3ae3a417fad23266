/** The wire shapes the console reads (Pterodactyl's, docs/reference/schedules.md and docs/reference/servers.md#the-server-routes). */

export interface Item<Name extends string, Attributes> {
  object: Name;
  attributes: Attributes;
}

export interface Pagination {
  total: number;
  count: number;
  per_page: number;
  current_page: number;
  total_pages: number;
}

export interface List<T> {
  object: 'list';
  data: T[];
  meta?: { pagination?: Pagination };
}

export interface User {
  uuid?: string;
  id?: number;
  username: string;
  email: string;
  admin?: boolean;
  root_admin?: boolean;
  /** Two-factor is on (GET /auth/session). */
  use_totp?: boolean;
}

export interface ServerAttributes {
  server_owner: boolean;
  identifier: string;
  uuid: string;
  name: string;
  node: string;
  description: string;
  status: string | null;
  is_suspended: boolean;
  is_installing: boolean;
  limits: { memory: number; disk: number; cpu: number };
  feature_limits: { backups: number; allocations?: number; databases?: number };
  sftp_details?: { ip: string; port: number };
  docker_image?: string;
  invocation?: string;
}

export type Server = Item<'server', ServerAttributes> & { meta?: { is_server_owner?: boolean; user_permissions?: string[] } };

export type PowerState = 'offline' | 'starting' | 'running' | 'stopping';

export interface Resources {
  current_state: PowerState;
  is_suspended: boolean;
  resources: { memory_bytes: number; cpu_absolute: number; disk_bytes: number; uptime: number };
}

export interface CronFields {
  minute: string;
  hour: string;
  day_of_month: string;
  month: string;
  day_of_week: string;
}

export type TaskAction = 'command' | 'power' | 'backup' | 'delete_files';

export interface Task {
  id: number;
  sequence_id: number;
  action: TaskAction;
  payload: string;
  time_offset: number;
  is_queued: boolean;
  continue_on_failure: boolean;
}

export interface Schedule {
  id: number;
  name: string;
  cron: CronFields;
  is_active: boolean;
  is_processing: boolean;
  only_when_online: boolean;
  last_run_at: string | null;
  next_run_at: string | null;
  relationships: { tasks: List<Item<'task', Task>> };
}

export interface ActivityActor {
  object: string;
  attributes: { uuid: string; username: string; email: string } | null;
}

export interface ActivityEntry {
  id: string;
  event: string;
  is_api: boolean;
  ip: string | null;
  description: string | null;
  properties: Record<string, unknown>;
  has_additional_metadata: boolean;
  timestamp: string;
  relationships: { actor: ActivityActor };
}

export interface Backup {
  uuid: string;
  name: string;
  ignored_files: string[];
  checksum: string | null;
  bytes: number;
  is_successful: boolean;
  is_locked: boolean;
  created_at: string;
  completed_at: string | null;
}

export interface ApiKey {
  identifier: string;
  description: string;
  allowed_ips: string[];
  last_used_at: string | null;
  created_at: string;
}
