import { Type } from '@sinclair/typebox';

export const PowerBody = Type.Object({
  signal: Type.Union([Type.Literal('start'), Type.Literal('stop'), Type.Literal('restart'), Type.Literal('kill')], {
    'x-rule': 'in',
  }),
});

export const CommandBody = Type.Object({
  command: Type.String({ minLength: 1 }),
});
