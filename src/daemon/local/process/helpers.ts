/** Small helpers every part of the supervisor uses. */
import { randomBytes } from 'node:crypto';

export function noop(): void {}

export function randomToken(): string {
  return randomBytes(8).toString('hex');
}

export function errnoCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string' ? err.code : undefined;
}
