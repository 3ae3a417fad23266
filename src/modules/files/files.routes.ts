/**
 * Pterodactyl's file routes under /api/client/servers/{server}/files (SPEC
 * 15), each with its permission; the work is in files.service.ts, the pull
 * in files.pull.ts, and what the signed URLs lead to in files.transfer.routes.ts.
 */
import type { FastifyInstance } from 'fastify';
import { Readable } from 'node:stream';
import type { AppDeps } from '../../deps.js';
import { registerRawBodyParser } from '../../http/body-parser.js';
import { item } from '../../http/envelopes.js';
import { payloadTooLarge } from '../../http/errors.js';
import { clientRoute } from '../../http/routes.js';
import { limitBytes } from './byte-limit.js';
import { parseMode } from './chmod-modes.js';
import { pullFile } from './files.pull.js';
import {
  ChmodBody,
  CopyBody,
  CreateFolderBody,
  DecompressBody,
  DirectoryQuery,
  FileQuery,
  FilesInRootBody,
  PullBody,
  RenameBody,
} from './files.schemas.js';
import {
  chmodFiles,
  compressFiles,
  copyFile,
  createFolder,
  decompressFile,
  deleteFiles,
  listFiles,
  logFileEvent,
  readFileContents,
  renameFiles,
  writeFileContents,
} from './files.service.js';
import { signedUrl, signedUrlKey } from './files.signed-urls.js';
import { fileListJson, fileListJsonChunks, SLICE } from './files.list-json.js';
import { fileItem } from './files.transformer.js';

const MIB = 1024 * 1024;

export async function registerFileRoutes(app: FastifyInstance, deps: AppDeps & { appKey: Buffer }) {
  const key = signedUrlKey(deps.appKey);
  const uploadLimitBytes = deps.config.uploadLimitMb * MIB;

  clientRoute(app, {
    method: 'GET',
    url: '/servers/:server/files/list',
    summary: 'List a folder: folders first, then files, each by name',
    permission: 'file.read',
    querystring: DirectoryQuery,
    // Rendered straight to JSON text, a large folder streamed a slice at a time (files.list-json.ts).
    handler: async (request, reply) => {
      const entries = await listFiles(deps, request.target.server, request.query.directory ?? '/');
      reply.type('application/json; charset=utf-8');
      if (entries.length <= SLICE) return reply.send(fileListJson(entries));
      return reply.send(Readable.from(fileListJsonChunks(entries)));
    },
  });

  clientRoute(app, {
    method: 'GET',
    url: '/servers/:server/files/contents',
    summary: "A file's raw bytes (at most FILE_EDIT_MAX_MB)",
    permission: 'file.read-content',
    querystring: FileQuery,
    handler: async (request, reply) => {
      const content = await readFileContents(deps, request.target.server, request.auth.actor, request.query.file);
      return reply.type('text/plain').send(content);
    },
  });

  clientRoute(app, {
    method: 'GET',
    url: '/servers/:server/files/download',
    summary: 'A signed URL (15 minutes) that downloads the file',
    permission: 'file.read-content',
    querystring: FileQuery,
    handler: async (request) => {
      const { server } = request.target;
      const file = request.query.file;
      const grant = { purpose: 'file-download' as const, serverUuid: server.uuid, userUuid: request.auth.user.uuid, file };
      const url = await signedUrl(key, grant, { appUrl: deps.config.appUrl, now: deps.clock.now() });
      await logFileEvent(deps, server, request.auth.actor, 'server:file.download', { file });
      return item('signed_url', { url });
    },
  });

  clientRoute(app, {
    method: 'GET',
    url: '/servers/:server/files/upload',
    summary: 'A signed URL (15 minutes) to POST multipart/form-data `files` parts to, with ?directory=',
    permission: 'file.create',
    handler: async (request) => {
      const grant = { purpose: 'file-upload' as const, serverUuid: request.target.server.uuid, userUuid: request.auth.user.uuid };
      return item('signed_url', { url: await signedUrl(key, grant, { appUrl: deps.config.appUrl, now: deps.clock.now() }) });
    },
  });

  clientRoute(app, {
    method: 'PUT',
    url: '/servers/:server/files/rename',
    summary: 'Rename or move entries under root',
    permission: 'file.update',
    mutates: true,
    blockedDuringRestore: true,
    body: RenameBody,
    handler: async (request, reply) => {
      await renameFiles(deps, request.target.server, request.auth.actor, request.body.root, request.body.files);
      return reply.status(204).send();
    },
  });

  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/files/copy',
    summary: 'Copy a file beside itself ("name copy.ext")',
    permission: 'file.create',
    mutates: true,
    blockedDuringRestore: true,
    body: CopyBody,
    handler: async (request, reply) => {
      await copyFile(deps, request.target.server, request.auth.actor, request.body.location);
      return reply.status(204).send();
    },
  });

  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/files/compress',
    summary: 'Pack entries of root into a new .tar.gz; answers its file_object',
    permission: 'file.archive',
    mutates: true,
    blockedDuringRestore: true,
    body: FilesInRootBody,
    handler: async (request) =>
      fileItem(await compressFiles(deps, request.target.server, request.auth.actor, request.body.root, request.body.files)),
  });

  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/files/decompress',
    summary: 'Unpack a .tar.gz, .tgz, .tar or .zip of root into root',
    permission: 'file.archive',
    mutates: true,
    blockedDuringRestore: true,
    body: DecompressBody,
    handler: async (request, reply) => {
      await decompressFile(deps, request.target.server, request.auth.actor, request.body.root, request.body.file);
      return reply.status(204).send();
    },
  });

  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/files/delete',
    summary: 'Delete entries of root (with everything below them)',
    permission: 'file.delete',
    mutates: true,
    blockedDuringRestore: true,
    body: FilesInRootBody,
    handler: async (request, reply) => {
      await deleteFiles(deps, request.target.server, request.auth.actor, request.body.root, request.body.files);
      return reply.status(204).send();
    },
  });

  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/files/create-folder',
    summary: 'Make a folder under root',
    permission: 'file.create',
    mutates: true,
    blockedDuringRestore: true,
    body: CreateFolderBody,
    handler: async (request, reply) => {
      await createFolder(deps, request.target.server, request.auth.actor, request.body.root, request.body.name);
      return reply.status(204).send();
    },
  });

  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/files/chmod',
    summary: 'Set permission bits (octal, at most 777)',
    permission: 'file.update',
    mutates: true,
    blockedDuringRestore: true,
    body: ChmodBody,
    handler: async (request, reply) => {
      // Every mode is checked before any is applied: a bad one changes nothing.
      const files = request.body.files.map(({ file, mode }, i) => ({ file, mode: parseMode(mode, `files.${i}.mode`) }));
      await chmodFiles(deps, request.target.server, request.auth.actor, request.body.root, files);
      return reply.status(204).send();
    },
  });

  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/files/pull',
    summary: 'Fetch an http(s) URL from a public address into a folder',
    permission: 'file.create',
    mutates: true,
    blockedDuringRestore: true,
    body: PullBody,
    handler: async (request, reply) => {
      await pullFile(deps, request.target.server, request.auth.actor, request.body);
      return reply.status(204).send();
    },
  });

  // The body of a write is the file itself, of any type: read raw, in a scope of its own.
  await app.register(async (scope) => {
    registerRawBodyParser(scope);
    clientRoute(scope, {
      method: 'POST',
      url: '/servers/:server/files/write',
      summary: 'Create or replace a file with the raw request body (any Content-Type; at most UPLOAD_LIMIT_MB)',
      permissionAnyOf: ['file.create', 'file.update'],
      mutates: true,
      blockedDuringRestore: true,
      querystring: FileQuery,
      handler: async (request, reply) => {
        const declared = Number(request.headers['content-length']);
        if (declared > uploadLimitBytes) {
          // The body is never read: the connection cannot carry another request after it.
          reply.header('connection', 'close');
          throw payloadTooLarge(`The file is larger than ${deps.config.uploadLimitMb} MiB.`);
        }
        const raw: unknown = request.body;
        const body = raw instanceof Readable ? raw : undefined;
        const limited = body ? limitBytes(body, uploadLimitBytes) : null;
        try {
          await writeFileContents(
            deps,
            request.target.server,
            request.auth.actor,
            request.query.file,
            limited ? limited.stream : Buffer.alloc(0),
            Number.isSafeInteger(declared) && declared >= 0 ? declared : undefined,
          );
        } catch (err) {
          // A refusal before the body was read whole: the connection cannot carry another request.
          if (body && !body.readableEnded) reply.header('connection', 'close');
          if (limited?.exceeded()) throw payloadTooLarge(`The file is larger than ${deps.config.uploadLimitMb} MiB.`);
          throw err;
        }
        return reply.status(204).send();
      },
    });
  });
}
