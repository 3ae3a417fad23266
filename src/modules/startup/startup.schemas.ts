import { Type, type Static } from '@sinclair/typebox';

/**
 * Pterodactyl's UpdateStartupVariableRequest: `key` required; `value` checked
 * by the variable's own rules in the service. An absent, null or empty value
 * (docs/reference/api.md#wire-conventions: not given) is the empty value, which only a variable whose rules
 * allow it (`nullable`, no `required`) takes.
 */
export const UpdateVariableBody = Type.Object({
  key: Type.String({ minLength: 1, maxLength: 191 }),
  value: Type.Optional(Type.Union([Type.String({ maxLength: 65535 }), Type.Number(), Type.Boolean()])),
});

export type UpdateVariableInput = Static<typeof UpdateVariableBody>;
