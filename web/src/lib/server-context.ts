import { createContext } from 'preact';
import { useContext, useEffect, useReducer, useRef, useState } from 'preact/hooks';
import type { Server } from '../api/types';
import type { Permissions } from './permissions';
import { ServerSocket, type Frame } from './socket';

/** What every section of a server's page shares: the server, the live socket, what the user may do. */
export interface ServerContextValue {
  /** The identifier in the address (short or full UUID). */
  id: string;
  server: Server;
  socket: ServerSocket | null;
  permissions: Permissions;
  /** The process state: live from the socket, else from GET /resources. */
  state: string | null;
}

export const ServerContext = createContext<ServerContextValue | null>(null);

export function useServer(): ServerContextValue {
  const value = useContext(ServerContext);
  if (!value) throw new Error('useServer outside a server page');
  return value;
}

/** One socket for the server's page while it is shown. */
export function useServerSocket(id: string, enabled: boolean): ServerSocket | null {
  const [socket, setSocket] = useState<ServerSocket | null>(null);
  useEffect(() => {
    if (!enabled) return;
    const created = new ServerSocket(id);
    setSocket(created);
    created.start();
    return () => {
      created.stop();
      setSocket(null);
    };
  }, [id, enabled]);
  return socket;
}

/** Re-renders when the socket's state (connected, reconnecting, …) changes. */
export function useSocketState(socket: ServerSocket | null): void {
  const [, bump] = useReducer((n: number, _: void) => n + 1, 0);
  useEffect(() => socket?.onState(() => bump()), [socket]);
}

/** Calls `handler` for every frame; the latest handler, without resubscribing. */
export function useSocketFrames(socket: ServerSocket | null, handler: (frame: Frame) => void): void {
  const latest = useRef(handler);
  latest.current = handler;
  useEffect(() => socket?.on((frame) => latest.current(frame)), [socket]);
}
