import type { FastifySchemaValidationError } from 'fastify/types/schema.js';
import { attributeName, ValidationError, type FieldFailure } from './errors.js';

/**
 * Request-body normalisation and the mapping of schema failures to Laravel's
 * validation vocabulary (docs/reference/api.md#wire-conventions, docs/reference/api.md#errors).
 */

/** Values Laravel's `boolean` rule accepts. */
export const LOOSE_BOOLEANS: readonly unknown[] = [true, false, 0, 1, '0', '1', 'true', 'false'];

export function toBoolean(value: unknown): boolean {
  return value === true || value === 1 || value === '1' || value === 'true';
}

/** Members TrimStrings leaves as sent, as Laravel's does: a password's spaces are part of it. */
const UNTRIMMED: ReadonlySet<string> = new Set(['current_password', 'password', 'password_confirmation']);

/**
 * Strings are trimmed, and a missing or null optional member, or an empty
 * string, means "not given" (docs/reference/api.md#wire-conventions) — Laravel's TrimStrings and
 * ConvertEmptyStringsToNull, which Pterodactyl's clients rely on.
 * Top-level only: the client API's bodies are flat.
 */
export function dropUnsetMembers(body: unknown): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return body;
  const out: Record<string, unknown> = {};
  for (const [key, raw] of Object.entries(body as Record<string, unknown>)) {
    const value = typeof raw === 'string' && !UNTRIMMED.has(key) ? raw.trim() : raw;
    if (value === null || value === undefined || value === '') continue;
    out[key] = value;
  }
  return out;
}

function fieldOf(error: FastifySchemaValidationError): string {
  const base = error.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (error.keyword === 'required') {
    const missing = (error.params as { missingProperty?: string }).missingProperty ?? '';
    return base ? `${base}.${missing}` : missing;
  }
  return base;
}

const TYPE_RULES: Record<string, string> = {
  string: 'string',
  integer: 'integer',
  number: 'numeric',
  boolean: 'boolean',
  object: 'array',
  array: 'array',
};

/** Turns one Ajv failure into a Laravel-style rule name and sentence. */
function describe(error: FastifySchemaValidationError, parentSchema: Record<string, unknown> | undefined): FieldFailure {
  const field = fieldOf(error);
  const name = attributeName(field || 'body');
  const params = error.params as Record<string, unknown>;
  const declaredRule = parentSchema?.['x-rule'] as string | undefined;
  switch (error.keyword) {
    case 'required':
      return { field, rule: 'required', detail: `The ${name} field is required.` };
    case 'type': {
      const type = String(params.type).split(',')[0] ?? 'string';
      const rule = TYPE_RULES[type] ?? type;
      const what =
        type === 'integer' ? 'an integer' : type === 'boolean' ? 'true or false' : type === 'number' ? 'a number' : `a ${type}`;
      return { field, rule, detail: `The ${name} field must be ${what}.` };
    }
    case 'maxLength':
      return { field, rule: 'max', detail: `The ${name} field must not be greater than ${params.limit} characters.` };
    case 'minLength':
      return { field, rule: 'min', detail: `The ${name} field must be at least ${params.limit} characters.` };
    case 'maximum':
      return { field, rule: 'max', detail: `The ${name} field must not be greater than ${params.limit}.` };
    case 'minimum':
      return { field, rule: 'min', detail: `The ${name} field must be at least ${params.limit}.` };
    case 'enum':
      if (declaredRule === 'boolean') return { field, rule: 'boolean', detail: `The ${name} field must be true or false.` };
      return { field, rule: 'in', detail: `The selected ${name} is invalid.` };
    case 'pattern':
      if (declaredRule === 'no_nul')
        return { field, rule: 'regex', detail: `The ${name} field must not contain NUL characters.` };
      return { field, rule: declaredRule ?? 'regex', detail: `The ${name} field format is invalid.` };
    default:
      return { field, rule: declaredRule ?? error.keyword, detail: `The ${name} field is invalid.` };
  }
}

export function validationErrorFromSchema(errors: FastifySchemaValidationError[]): ValidationError {
  const failures: FieldFailure[] = [];
  const seen = new Set<string>();
  for (const error of errors) {
    const failure = describe(error, (error as { parentSchema?: Record<string, unknown> }).parentSchema);
    const key = `${failure.field}|${failure.rule}`;
    if (seen.has(key)) continue;
    seen.add(key);
    failures.push(failure);
  }
  return new ValidationError(failures);
}
