/**
 * The console's two writes (docs/reference/power-and-console.md): a power
 * signal (POST /power) and a command, over the live socket when it is up and
 * through POST /command when it is not. Every refusal becomes an Error whose
 * message the page shows beside the control; the command line keeps the
 * command when its mutation fails, so a refused one can be sent again.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { ServerSocket } from '../lib/socket';
import { ApiError, post } from './client';
import { resourcesKey } from './resources';
import { serverUrl } from './servers';

/** The socket closes on a message over 4 KiB (src/modules/websocket MAX_INBOUND_FRAME_BYTES). */
export const MAX_FRAME_BYTES = 4 * 1024;
/** The input's own limit: the frame's wrapping takes some of the 4 KiB. */
export const MAX_COMMAND_CHARS = 4000;

/** The socket's limit (10 commands, then 1 a second) would refuse this one: nothing was sent. */
export class CommandThrottledError extends Error {
  constructor() {
    super('Too many commands: that one was not sent. Wait a moment and send it again.');
    this.name = 'CommandThrottledError';
  }
}

/** What the socket refused after it was sent (its `throttled` answer): the page's words for it. */
export const refusedCommandText = (line: string) => `Too many commands: “${line}” was not sent. Wait a moment and send it again.`;
const COMMAND_TOO_LONG = `This command is too long to send: the console takes at most ${MAX_FRAME_BYTES} bytes a message (accented letters and symbols take more than one).`;

export type PowerSignal = 'start' | 'stop' | 'restart' | 'kill';

function commandFrameBytes(line: string): number {
  return new TextEncoder().encode(JSON.stringify({ event: 'send command', args: [line] })).length;
}

/** The API's 429 says "Too Many Attempts."; the page says what was not done and what to do. */
function politeWhenThrottled(error: unknown, notDone: string): unknown {
  if (!(error instanceof ApiError) || error.status !== 429) return error;
  return new ApiError(429, `Too many requests: ${notDone}. Wait a moment and try again.`, error.errors);
}

/**
 * Sends one console line, answering how ('socket' or 'http'); throws (and sends nothing) when it is too
 * long or the socket's limit is reached.
 */
export function useSendCommand(server: string, socket: ServerSocket | null) {
  return useMutation({
    mutationFn: async (line: string): Promise<'socket' | 'http'> => {
      if (commandFrameBytes(line) > MAX_FRAME_BYTES) throw new Error(COMMAND_TOO_LONG);
      const sent = socket?.send('send command', line) ?? 'closed';
      if (sent === 'throttled') throw new CommandThrottledError();
      if (sent === 'sent') return 'socket';
      try {
        await post(serverUrl(server, 'command'), { command: line });
      } catch (error) {
        throw politeWhenThrottled(error, 'that command was not sent');
      }
      return 'http';
    },
  });
}

const SIGNAL_WORDS: Record<PowerSignal, string> = {
  start: 'the server was not started',
  stop: 'the server was not stopped',
  restart: 'the server was not restarted',
  kill: 'the server was not killed',
};

/** POST /power (204): the state then changes on the socket, and in GET /resources for whoever reads it. */
export function usePowerAction(server: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: async (signal: PowerSignal) => {
      try {
        await post(serverUrl(server, 'power'), { signal });
      } catch (error) {
        throw politeWhenThrottled(error, SIGNAL_WORDS[signal]);
      }
    },
    onSuccess: () => client.invalidateQueries({ queryKey: resourcesKey(server) }),
  });
}
