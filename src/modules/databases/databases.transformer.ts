import { can, type Access } from '../../http/permissions.js';
import { encodeDatabaseId } from './databases.ids.js';
import { databasePassword, type DatabaseView } from './databases.service.js';

/**
 * Pterodactyl's DatabaseTransformer: `server_database`, and with
 * `include=password` a `database_password` relationship, which without
 * `database.view_password` is Fractal's null resource.
 */
export function databaseItem(deps: { appKey: Buffer }, view: DatabaseView, access: Access, withPassword: boolean) {
  const attributes: Record<string, unknown> = {
    id: encodeDatabaseId(view.row.id),
    host: { address: view.host.host, port: view.host.port },
    name: view.row.database,
    username: view.row.username,
    connections_from: view.row.remote,
    max_connections: view.row.max_connections,
  };
  if (withPassword) {
    attributes.relationships = {
      password: can(access, 'database.view_password')
        ? { object: 'database_password', attributes: { password: databasePassword(deps, view.row) } }
        : { object: 'null_resource', attributes: null },
    };
  }
  return { object: 'server_database', attributes };
}

export function includesPassword(include: string | undefined): boolean {
  return (include ?? '').split(',').some((part) => part.trim() === 'password');
}
