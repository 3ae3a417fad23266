import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { AppDeps } from '../../src/deps.js';
import type { ServerRow, ServerStatus, UserRow } from '../../src/db/schema.js';
import { NO_LIMITS, type ServerLimits } from '../../src/daemon/daemon.js';
import { createUser } from '../../src/modules/users/users.repository.js';
import { createApiKey } from '../../src/modules/keys/keys.service.js';
import { createServer } from '../../src/modules/servers/servers.service.js';
import { ECHO_FILE, installEchoServer } from './containment.js';

const unique = () => randomBytes(5).toString('hex');

export interface UserWithToken {
  user: UserRow;
  token: string;
}

/** Fresh rows for one test: every call makes new users, keys and servers with new UUIDs. */
export class Factories {
  constructor(private readonly deps: AppDeps) {}

  async user(opts: { admin?: boolean; allowedIps?: string[] } = {}): Promise<UserWithToken> {
    const name = `user_${unique()}`;
    const user = await createUser(this.deps.db, {
      username: name,
      email: `${name}@example.test`,
      rootAdmin: opts.admin ?? false,
      now: this.deps.clock.now(),
    });
    const { token } = await createApiKey(this.deps.db, {
      userId: user.id,
      description: 'test',
      allowedIps: opts.allowedIps ?? [],
      now: this.deps.clock.now(),
    });
    return { user, token };
  }

  async server(
    owner: UserRow,
    opts: {
      name?: string;
      startup?: string;
      stopCommand?: string;
      backupLimit?: number;
      status?: ServerStatus;
      limits?: Partial<ServerLimits>;
    } = {},
  ): Promise<ServerRow> {
    const server = await createServer(this.deps.db, this.deps.daemon, {
      ownerId: owner.id,
      name: opts.name ?? `server ${unique()}`,
      startup: opts.startup ?? null,
      stopCommand: opts.stopCommand ?? null,
      ...(opts.backupLimit !== undefined ? { backupLimit: opts.backupLimit } : {}),
      ...(opts.limits !== undefined ? { limits: { ...NO_LIMITS, ...opts.limits } } : {}),
      now: this.deps.clock.now(),
    });
    // A server that runs the echo fixture has it in its volume, as a game server has its jar: a confined process sees nothing else.
    if (opts.startup?.includes(ECHO_FILE)) installEchoServer(path.join(this.deps.config.dataDir, 'volumes', server.uuid));
    if (opts.status) await this.setStatus(server, opts.status);
    return { ...server, status: opts.status ?? null };
  }

  /** An owner with a token and a server of theirs. */
  async ownedServer(opts: Parameters<Factories['server']>[1] = {}) {
    const owner = await this.user();
    const server = await this.server(owner.user, opts);
    return { owner, server };
  }

  async subuser(server: ServerRow, permissions: string[]): Promise<UserWithToken> {
    const sub = await this.user();
    await this.deps.db
      .insertInto('subusers')
      .values({
        server_id: server.id,
        user_id: sub.user.id,
        permissions: JSON.stringify(permissions),
        created_at: this.deps.clock.now(),
      })
      .execute();
    return sub;
  }

  async setStatus(server: ServerRow, status: ServerStatus | null) {
    await this.deps.db.updateTable('servers').set({ status }).where('id', '=', server.id).execute();
  }
}
