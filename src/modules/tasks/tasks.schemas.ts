import { Type, type Static } from '@sinclair/typebox';
import { LooseBoolean } from '../schedules/schedules.schemas.js';

export const TASK_ACTIONS = ['command', 'power', 'backup', 'delete_files'] as const;
export type TaskAction = (typeof TASK_ACTIONS)[number];

/** Whole seconds; digit strings are accepted too, as Laravel's `numeric` rule does. */
const Seconds = Type.Unsafe<number | string>({ type: ['integer', 'string'], pattern: '^[0-9]+$', 'x-rule': 'integer' });
const Position = Type.Unsafe<number | string>({ type: ['integer', 'string'], pattern: '^[0-9]+$', 'x-rule': 'integer' });

const taskMembers = {
  payload: Type.Optional(Type.String({ maxLength: 65_535 })),
  sequence_id: Type.Optional(Position),
  continue_on_failure: Type.Optional(LooseBoolean),
};

export const CreateTaskBody = Type.Object({
  action: Type.Union(
    TASK_ACTIONS.map((a) => Type.Literal(a)),
    { 'x-rule': 'in' },
  ),
  time_offset: Seconds,
  ...taskMembers,
});

export const UpdateTaskBody = Type.Object({
  action: Type.Optional(
    Type.Union(
      TASK_ACTIONS.map((a) => Type.Literal(a)),
      { 'x-rule': 'in' },
    ),
  ),
  time_offset: Type.Optional(Seconds),
  ...taskMembers,
});

export type CreateTaskInput = Static<typeof CreateTaskBody>;
export type UpdateTaskInput = Static<typeof UpdateTaskBody>;
