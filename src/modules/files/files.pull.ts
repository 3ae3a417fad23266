/**
 * `POST /files/pull` (docs/reference/files-and-sftp.md): the service fetches a URL into the volume.
 * The URL and its host are checked before the answer (a refusal is a 400 at
 * once, whatever `foreground` says). With `foreground` true the pull is done
 * before the 204; otherwise the 204 comes at once and the pull runs as a
 * background job, whose failure is logged as `server:file.pull.fail` (there
 * is no one left to answer). The bytes are streamed into writeFile, so they
 * count against the disk limit as they arrive and a failure leaves nothing.
 */
import type { Actor } from '../../actor.js';
import type { ServerRow } from '../../db/schema.js';
import type { AppDeps } from '../../deps.js';
import { badRequest, HttpError, ValidationError } from '../../http/errors.js';
import { toBoolean } from '../../http/validation.js';
import { changeServerVolume } from '../backups/volume-changes.js';
import { daemonServer } from '../servers/servers.service.js';
import { toHttpError } from './files.errors.js';
import type { PullInput } from './files.schemas.js';
import { joinVolumePath, logFileEvent, type FilesDeps } from './files.service.js';
import { assertPullable, fetchPull, parsePullUrl, PullFailed, PullRefused, pullFileName } from './pull-client.js';

export type PullDeps = FilesDeps & Pick<AppDeps, 'jobs'>;

function asHttpError(err: unknown): unknown {
  if (err instanceof PullRefused || err instanceof PullFailed) return badRequest(err.message);
  return toHttpError(err);
}

export async function pullFile(deps: PullDeps, server: ServerRow, actor: Actor, input: PullInput): Promise<void> {
  const url = parsePullUrl(input.url);
  if (!url) throw ValidationError.of('url', 'url', 'The url field must be a valid http or https URL.');
  const directory = input.directory ?? '/';
  const useHeader = input.use_header !== undefined && toBoolean(input.use_header);
  // A folder or name that climbs out of the volume is refused now, not found out in the background.
  joinVolumePath(directory, input.filename ?? 'download');
  try {
    await assertPullable(url);
  } catch (err) {
    throw asHttpError(err);
  }
  const properties = { directory, url: input.url };
  const run = async (): Promise<void> => {
    const file = await changeServerVolume(deps, server.id, 'nothing was pulled', async () => {
      const { response, url: finalUrl } = await fetchPull(url);
      const name = input.filename ?? pullFileName(finalUrl, response, useHeader);
      const file = joinVolumePath(directory, name);
      const length = Number(response.headers['content-length']);
      await deps.daemon.files.writeFile(
        daemonServer(server),
        file,
        response,
        Number.isSafeInteger(length) && length >= 0 ? { expectedBytes: length } : {},
      );
      return file;
    });
    await logFileEvent(deps, server, actor, 'server:file.pull', { ...properties, file });
  };

  if (input.foreground !== undefined && toBoolean(input.foreground)) {
    try {
      await run();
    } catch (err) {
      throw asHttpError(err);
    }
    return;
  }
  deps.jobs.run(`pull into server ${server.uuid}`, async () => {
    try {
      await run();
    } catch (err) {
      const mapped = asHttpError(err);
      const reason = mapped instanceof HttpError ? mapped.detail : 'The pull failed.';
      await logFileEvent(deps, server, actor, 'server:file.pull.fail', { ...properties, error: reason });
    }
  });
}
