import { Type, type Static } from '@sinclair/typebox';
import { LOOSE_BOOLEANS } from '../../http/validation.js';

export const LooseBoolean = Type.Unsafe<boolean | number | string>({
  enum: [...LOOSE_BOOLEANS],
  'x-rule': 'boolean',
  description: 'true/false, 1/0, "1"/"0", "true"/"false"',
});

const CronPart = (description: string) => Type.Optional(Type.String({ maxLength: 191, description }));

/** One body for create and update: on create only `name` is required (docs/reference/schedules.md#schedules). */
const scheduleMembers = {
  minute: CronPart('cron minute field, default *'),
  hour: CronPart('cron hour field, default *'),
  day_of_month: CronPart('cron day-of-month field, default *'),
  month: CronPart('cron month field, default *'),
  day_of_week: CronPart('cron day-of-week field, default *'),
  is_active: Type.Optional(LooseBoolean),
  only_when_online: Type.Optional(LooseBoolean),
};

export const CreateScheduleBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 191 }),
  ...scheduleMembers,
});

export const UpdateScheduleBody = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 191 })),
  ...scheduleMembers,
});

export type CreateScheduleInput = Static<typeof CreateScheduleBody>;
export type UpdateScheduleInput = Static<typeof UpdateScheduleBody>;
