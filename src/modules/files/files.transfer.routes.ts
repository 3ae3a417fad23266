/**
 * What the signed URLs lead to (docs/reference/files-and-sftp.md), outside the guarded /api/client
 * tree as Wings serves them: `GET /download/file`, `GET /download/backup`
 * (the bytes, `Content-Disposition: attachment`) and `POST /upload/file`
 * (multipart `files` parts into `?directory=`). The token is the credential;
 * at use the user must still see the server and hold the permission (a 403
 * otherwise), so a link outlives no removal of a subuser.
 */
import multipart from '@fastify/multipart';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import type { ServerRow, UserRow } from '../../db/schema.js';
import type { AppDeps } from '../../deps.js';
import { badRequest, conflict, forbidden, HttpError, notFound, payloadTooLarge } from '../../http/errors.js';
import type { ServerAction } from '../../http/permissions.js';
import { findBackupOfServer } from '../backups/backups.repository.js';
import { changeServerVolume } from '../backups/volume-changes.js';
import { decideServerAction } from '../servers/access-policy.js';
import { daemonServer } from '../servers/servers.service.js';
import { findUserByReference } from '../users/users.repository.js';
import { limitBytes } from './byte-limit.js';
import { mappingFileErrors, toHttpError } from './files.errors.js';
import { TokenQuery, UploadQuery } from './files.schemas.js';
import { joinVolumePath, logFileEvent } from './files.service.js';
import { signedUrlKey, signedUrlPath, verifyGrant, type SignedPurpose } from './files.signed-urls.js';
import { baseName } from './files.transformer.js';

const MIB = 1024 * 1024;
const UPLOAD_FIELDS = new Set(['files', 'files[]']);

type TransferDeps = AppDeps & { appKey: Buffer };

export async function registerFileTransferRoutes(app: FastifyInstance, deps: TransferDeps) {
  const key = signedUrlKey(deps.appKey);
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  const uploadLimitBytes = deps.config.uploadLimitMb * MIB;

  /**
   * The grant of `token`, its user and server, once the access policy allows
   * the user `action` there now: a user who can no longer see the server, or
   * lacks the permission, is a 403 (the link is theirs, the server is not
   * hidden from it); a status that forbids the action is its 409.
   */
  async function authorise(token: unknown, purpose: SignedPurpose, action: ServerAction) {
    const grant = await verifyGrant(key, token, { issuer: deps.config.appUrl, now: deps.clock.now(), purpose });
    const user = await findUserByReference(deps.db, grant.userUuid);
    if (!user || user.uuid !== grant.userUuid) throw forbidden('The user of this link no longer exists.');
    const decision = await decideServerAction(deps.db, user, grant.serverUuid, action);
    if (!decision.ok) {
      if (decision.refusal.kind === 'conflict') throw conflict(decision.refusal.message);
      throw forbidden('You no longer have access to this server.');
    }
    return { grant, user, server: decision.target.server };
  }

  typed.get(signedUrlPath('file-download'), { schema: { hide: true, querystring: TokenQuery } }, async (request, reply) => {
    const { grant, server } = await authorise(request.query.token, 'file-download', {
      permission: 'file.read-content',
      mutates: false,
    });
    const file = grant.file ?? '/';
    const { entry, stream } = await mappingFileErrors(() => deps.daemon.files.openRead(daemonServer(server), file));
    return sendAttachment(reply, baseName(file), entry.size, stream);
  });

  typed.get(signedUrlPath('backup-download'), { schema: { hide: true, querystring: TokenQuery } }, async (request, reply) => {
    const { grant, server } = await authorise(request.query.token, 'backup-download', {
      permission: 'backup.download',
      mutates: false,
    });
    const backup = grant.backupUuid ? await findBackupOfServer(deps.db, grant.backupUuid, server.id) : undefined;
    if (!backup || backup.is_successful !== 1) throw notFound('The backup of this link no longer exists.');
    const { bytes, stream } = await mappingFileErrors(() => deps.daemon.files.openBackup(daemonServer(server), backup.uuid));
    return sendAttachment(reply, `${backup.uuid}.tar.gz`, bytes, stream);
  });

  await app.register(async (scope) => {
    await scope.register(multipart, {
      limits: { fileSize: uploadLimitBytes, files: 1000, fields: 100, parts: 1100, fieldSize: 64 * 1024 },
      throwFileSizeLimit: true,
    });
    scope
      .withTypeProvider<TypeBoxTypeProvider>()
      .post(signedUrlPath('file-upload'), { schema: { hide: true, querystring: UploadQuery } }, async (request, reply) => {
        const query = request.query;
        // Until the upload is under way a refusal leaves the body unread: the connection cannot carry another request.
        reply.header('connection', 'close');
        const action = { permission: 'file.create', mutates: true, blockedDuringRestore: true } as const;
        const { server, user } = await authorise(query.token, 'file-upload', action);
        // Refused before a byte of the body is read: the client need not send it.
        if (Number(request.headers['content-length']) > uploadLimitBytes) {
          throw payloadTooLarge(`The upload is larger than ${deps.config.uploadLimitMb} MiB.`);
        }
        if (!request.isMultipart()) throw badRequest('An upload must be sent as multipart/form-data with `files` parts.');
        // A folder climbing out of the volume is refused before the body is read.
        joinVolumePath(query.directory ?? '/', 'upload');
        reply.removeHeader('connection');
        await uploadParts(deps, request, reply, { server, user, directory: query.directory ?? '/', uploadLimitBytes });
        return reply.status(204).send();
      });
  });
}

function sendAttachment(reply: FastifyReply, name: string, bytes: number, stream: Readable) {
  const ascii = name.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  return reply
    .header('content-type', 'application/octet-stream')
    .header('content-length', bytes)
    .header('content-disposition', `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`)
    .header('cache-control', 'no-store')
    .send(stream);
}

/** Streams each `files` part into the volume (atomically, by writeFile), all of them within the upload limit. */
async function uploadParts(
  deps: TransferDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  options: { server: ServerRow; user: UserRow; directory: string; uploadLimitBytes: number },
): Promise<void> {
  const { server, user, directory } = options;
  const actor = { userId: user.id, apiKeyId: null, ip: request.ip };
  let remaining = options.uploadLimitBytes;
  await changeServerVolume(deps, server.id, 'no files were uploaded', async () => {
    for await (const part of request.parts()) {
      if (part.type !== 'file') continue;
      if (!UPLOAD_FIELDS.has(part.fieldname)) {
        part.file.resume();
        continue;
      }
      // Wings keeps only the last part of a part's file name: a name cannot choose the folder.
      const name = baseName(part.filename.replace(/\\/g, '/'));
      if (part.filename.trim() === '' || name === '.' || name === '..') {
        part.file.resume();
        throw badRequest('Every uploaded file needs a name.');
      }
      const limited = limitBytes(part.file, remaining);
      const file = joinVolumePath(directory, name);
      try {
        await deps.daemon.files.writeFile(daemonServer(server), file, limited.stream);
      } catch (err) {
        reply.header('connection', 'close');
        const code = (err as { code?: string }).code;
        if (limited.exceeded() || code === 'FST_REQ_FILE_TOO_LARGE') {
          throw payloadTooLarge(`The upload is larger than ${deps.config.uploadLimitMb} MiB.`);
        }
        throw multipartError(err);
      }
      remaining -= limited.bytes();
      await logFileEvent(deps, server, actor, 'server:file.uploaded', { directory, file: name });
    }
  }).catch((err: unknown) => {
    throw multipartError(err);
  });
}

/** A multipart parser's refusal (a 4xx with a FST_ code) as docs/reference/api.md#errors's error; a file error mapped; anything else as is. */
function multipartError(err: unknown): unknown {
  const mapped = toHttpError(err);
  if (mapped instanceof HttpError) return mapped;
  const { statusCode, code, message } = err as { statusCode?: number; code?: string; message?: string };
  if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500 && code?.startsWith('FST_')) {
    return new HttpError(
      statusCode === 413 ? 413 : 400,
      statusCode === 413 ? 'PayloadTooLargeHttpException' : 'BadRequestHttpException',
      message ?? 'The upload could not be read.',
    );
  }
  return err;
}
