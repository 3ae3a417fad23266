import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../../deps.js';
import { clientRoute } from '../../http/routes.js';
import { UpdateAllocationBody } from './allocations.schemas.js';
import {
  assignAllocation,
  listServerAllocations,
  makeAllocationPrimary,
  removeAllocation,
  updateAllocationNotes,
} from './allocations.service.js';
import { allocationItem, allocationList } from './allocations.transformer.js';

/**
 * A server's allocations (docs/reference/network-and-allocations.md), Pterodactyl's NetworkAllocationController.
 * A change takes effect at the server's next start, as in Pterodactyl.
 */
export function registerAllocationRoutes(app: FastifyInstance, deps: AppDeps) {
  clientRoute(app, {
    method: 'GET',
    url: '/servers/:server/network/allocations',
    summary: "List the server's allocations",
    permission: 'allocation.read',
    handler: async (request) => {
      const { server } = request.target;
      return allocationList(await listServerAllocations(deps.db, server), server.allocation_id);
    },
  });

  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/network/allocations',
    summary: "Give the server a free allocation on its primary's IP (up to its allocation limit)",
    permission: 'allocation.create',
    mutates: true,
    handler: async (request) => {
      const { server } = request.target;
      const allocation = await assignAllocation(deps, server, request.auth.actor);
      // A server without a primary gets this one as its primary.
      return allocationItem(allocation, server.allocation_id ?? allocation.id);
    },
  });

  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/network/allocations/:allocation',
    summary: "Set an allocation's notes",
    permission: 'allocation.update',
    mutates: true,
    body: UpdateAllocationBody,
    handler: async (request) => {
      const { server, allocation } = request.target;
      const updated = await updateAllocationNotes(deps, server, allocation, request.auth.actor, request.body);
      return allocationItem(updated, server.allocation_id);
    },
  });

  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/network/allocations/:allocation/primary',
    summary: "Make an allocation the server's primary one (SERVER_IP and SERVER_PORT)",
    permission: 'allocation.update',
    mutates: true,
    handler: async (request) => {
      const { server, allocation } = request.target;
      await makeAllocationPrimary(deps, server, allocation, request.auth.actor);
      return allocationItem(allocation, allocation.id);
    },
  });

  clientRoute(app, {
    method: 'DELETE',
    url: '/servers/:server/network/allocations/:allocation',
    summary: 'Remove an allocation from the server (not its primary)',
    permission: 'allocation.delete',
    mutates: true,
    handler: async (request, reply) => {
      const { server, allocation } = request.target;
      await removeAllocation(deps, server, allocation, request.auth.actor);
      return reply.status(204).send();
    },
  });
}
