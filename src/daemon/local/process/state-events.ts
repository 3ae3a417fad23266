import type { ServerState } from '../../daemon.js';
import type { ProcessLogger, StateListener } from './supervisor-options.js';

/** Who is told when a server's state changes. */
export class StateEvents {
  private readonly listeners = new Set<StateListener>();

  constructor(private readonly log: ProcessLogger) {}

  subscribe(listener: StateListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** A listener's failure is logged, never passed on: it must not break a power action. */
  emit(serverUuid: string, state: ServerState): void {
    for (const listener of [...this.listeners]) {
      try {
        const result: unknown = listener(serverUuid, state);
        if (result instanceof Promise) result.catch((err: unknown) => this.logListenerFailure(err, serverUuid, state));
      } catch (err) {
        this.logListenerFailure(err, serverUuid, state);
      }
    }
  }

  private logListenerFailure(err: unknown, serverUuid: string, state: ServerState): void {
    this.log.error({ err, serverUuid, state }, 'a server state listener failed');
  }
}
