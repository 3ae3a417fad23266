import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../../app.js';

export function registerActivityRoutes(_app: FastifyInstance, _deps: AppDeps) {}
