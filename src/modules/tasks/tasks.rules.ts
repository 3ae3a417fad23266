import { forbidden, ValidationError } from '../../http/errors.js';
import { can, permissionForSignal, type Access, type Permission, type PowerSignal } from '../../http/permissions.js';
import type { TaskAction } from './tasks.schemas.js';
import { checkIgnored } from '../backups/backups.ignored.js';

/** The task rules of docs/reference/schedules.md#tasks that depend on more than one member. */

export const POWER_SIGNALS: readonly PowerSignal[] = ['start', 'stop', 'restart', 'kill'];
export const COMMAND_MAX_BYTES = 4096;
export const MAX_TIME_OFFSET = 900;

/** Checks `payload` for `action`; returns the payload to store. */
export function validatePayload(action: TaskAction, payload: string | undefined): string {
  const invalid = (rule: string, detail: string) => ValidationError.of('payload', rule, detail);
  switch (action) {
    case 'command':
      if (payload === undefined) throw invalid('required', 'The payload field is required when action is command.');
      if (/[\r\n]/.test(payload)) throw invalid('regex', 'The payload field must be a single line.');
      if (Buffer.byteLength(payload, 'utf8') > COMMAND_MAX_BYTES) {
        throw invalid('max', `The payload field must not be greater than ${COMMAND_MAX_BYTES} bytes.`);
      }
      return payload;
    case 'power':
      if (payload === undefined) throw invalid('required', 'The payload field is required when action is power.');
      if (!(POWER_SIGNALS as readonly string[]).includes(payload)) throw invalid('in', 'The selected payload is invalid.');
      return payload;
    case 'backup':
      // The payload is the backup's `ignored` patterns, with the same bounds (docs/reference/backups-and-restores.md#durability).
      return checkIgnored(payload, 'payload') ?? '';
    case 'delete_files': {
      if (payload === undefined) throw invalid('required', 'The payload field is required when action is delete_files.');
      const paths = deleteFilesPaths(payload);
      if (paths.length === 0) throw invalid('required', 'The payload field is required when action is delete_files.');
      for (const p of paths) {
        if (p.startsWith('/') || p.startsWith('\\') || p.split(/[\\/]/).includes('..')) {
          throw invalid('regex', "The payload field must only name paths inside the server's volume.");
        }
      }
      return payload;
    }
  }
}

/** The paths of a delete_files payload: one per line, blank lines ignored. */
export function deleteFilesPaths(payload: string): string[] {
  return payload
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '');
}

/** The permission a person needs to do by hand what the task does (docs/reference/schedules.md#tasks). */
export function permissionForTask(action: TaskAction, payload: string): Permission {
  switch (action) {
    case 'command':
      return 'control.console';
    case 'power':
      return permissionForSignal(payload as PowerSignal);
    case 'backup':
      return 'backup.create';
    case 'delete_files':
      return 'file.delete';
  }
}

export function assertMayUseTask(access: Access, action: TaskAction, payload: string, backupLimit: number): void {
  if (!can(access, permissionForTask(action, payload))) throw forbidden();
  if (action === 'backup' && backupLimit === 0) throw forbidden('Backups are not enabled for this server.');
}

/** `time_offset` as a number in 0..900 (422 otherwise). */
export function timeOffset(value: number | string): number {
  const seconds = typeof value === 'number' ? value : Number(value);
  if (!Number.isInteger(seconds) || seconds < 0) {
    throw ValidationError.of('time_offset', 'min', 'The time offset field must be at least 0.');
  }
  if (seconds > MAX_TIME_OFFSET) {
    throw ValidationError.of('time_offset', 'max', `The time offset field must not be greater than ${MAX_TIME_OFFSET}.`);
  }
  return seconds;
}

/** The largest value the `sequence_id` column holds on every database (PostgreSQL's `integer`). */
const MAX_SEQUENCE_ID = 2_147_483_647;

export function sequencePosition(value: number | string): number {
  const position = typeof value === 'number' ? value : Number(value);
  if (!Number.isInteger(position) || position < 1) {
    throw ValidationError.of('sequence_id', 'min', 'The sequence id field must be at least 1.');
  }
  if (position > MAX_SEQUENCE_ID) {
    throw ValidationError.of('sequence_id', 'max', `The sequence id field must not be greater than ${MAX_SEQUENCE_ID}.`);
  }
  return position;
}
