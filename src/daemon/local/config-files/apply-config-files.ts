/**
 * The egg's config files (docs/reference/eggs-and-installs.md), edited before every start as Wings edits
 * them (UpdateConfigurationFiles): each file through its parser, a missing
 * file created (as Wings' Touch creates it), one file's failure reported and
 * the others still done, the start going ahead either way (Wings logs and
 * goes on). Every read and write goes through the files layer (docs/reference/files-and-sftp.md):
 * descriptor-relative, never through a link; a config file that is a link
 * is refused, never followed, and left as it is. A file is only written
 * when its content changed.
 *
 * A SIGKILL at any instant leaves each file whole: either as it was or as
 * edited (the files layer writes a temporary file and renames it over), and
 * the next start edits it again.
 */
import fs from 'node:fs/promises';
import { VolumeFileError, type ConfigFileEdit, type ConfigFileParser, type DaemonServer } from '../../daemon.js';
import type { ProcessLogger } from '../process/supervisor-options.js';
import { resolveDaemonValues } from './daemon-values.js';
import { editIniFile } from './ini-file.js';
import { editJsonFile } from './json-file.js';
import { editPropertiesFile } from './properties-file.js';
import { replacementsOf, type Replacement } from './replacements.js';
import { editTextFile } from './text-file.js';
import { editXmlFile } from './xml-file.js';
import { editYamlFile } from './yaml-file.js';

/** A config file is read whole: larger than this, it is left alone (and the console says so). */
const CONFIG_FILE_MAX_BYTES = 8 * 1024 * 1024;

/** The part of the files layer (LocalFiles) this needs. */
export interface ConfigFileStore {
  readFile(server: DaemonServer, file: string, maxBytes: number): Promise<Buffer>;
  writeFile(server: DaemonServer, file: string, content: Buffer): Promise<unknown>;
}

const EDITORS: Readonly<Record<ConfigFileParser, (text: string, replacements: readonly Replacement[]) => string>> = {
  properties: editPropertiesFile,
  yaml: editYamlFile,
  json: editJsonFile,
  ini: editIniFile,
  xml: editXmlFile,
  file: editTextFile,
};

/** What the console is told when a config file could not be edited (the server starts anyway). */
export function configFileFailureLine(file: string, reason: string): string {
  return `config file ${file} was not updated: ${reason}`;
}

/**
 * Edits each of the server's config files; never throws. `daemonValue`
 * answers Wings' `{{config.<key>}}` placeholders (daemon-values.ts). A file that could
 * not be edited gets a line in the console log (`consoleLog`) and one in the
 * service's log.
 */
export async function applyConfigFiles(
  store: ConfigFileStore,
  server: DaemonServer,
  consoleLog: string,
  log: ProcessLogger,
  daemonValue: (key: string) => string | undefined = () => undefined,
): Promise<void> {
  for (const edit of server.configFiles ?? []) {
    try {
      await applyConfigFile(store, server, edit, daemonValue);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      log.warn({ serverUuid: server.uuid, file: edit.file, parser: edit.parser, err }, 'could not update a config file');
      await fs
        .appendFile(consoleLog, `${configFileFailureLine(edit.file, reason)}\n`)
        .catch((appendErr: unknown) =>
          log.warn({ err: appendErr, serverUuid: server.uuid }, 'could not write to the console log'),
        );
    }
  }
}

async function applyConfigFile(
  store: ConfigFileStore,
  server: DaemonServer,
  edit: ConfigFileEdit,
  daemonValue: (key: string) => string | undefined,
): Promise<void> {
  const editor = Object.hasOwn(EDITORS, edit.parser) ? EDITORS[edit.parser] : undefined;
  if (!editor) throw new Error(`unknown parser "${String(edit.parser)}"`);
  let before: Buffer | null;
  try {
    before = await store.readFile(server, edit.file, CONFIG_FILE_MAX_BYTES);
  } catch (err) {
    if (!(err instanceof VolumeFileError && err.kind === 'not-found')) throw err;
    before = null;
  }
  const text = before === null ? '' : before.toString('utf8');
  const replacements = replacementsOf(edit.find).map((r) => ({ ...r, value: resolveDaemonValues(r.value, daemonValue) }));
  const after = editor(text, replacements);
  if (before !== null && after === text) return;
  await store.writeFile(server, edit.file, Buffer.from(after, 'utf8'));
}
