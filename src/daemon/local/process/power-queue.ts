import { noop } from './helpers.js';

/** Each server's chain of power actions, so that e.g. two concurrent starts spawn one process. */
export class PowerQueue {
  /** The tail of each server's chain. */
  private readonly queues = new Map<string, Promise<void>>();

  /** Runs `work` after every earlier power action on the same server has settled. */
  run<T>(serverUuid: string, work: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(serverUuid) ?? Promise.resolve();
    const result = previous.then(work);
    const tail = result.then(noop, noop);
    this.queues.set(serverUuid, tail);
    void tail.then(() => {
      if (this.queues.get(serverUuid) === tail) this.queues.delete(serverUuid);
    });
    return result;
  }

  /** The servers with a power action queued or under way. */
  servers(): IterableIterator<string> {
    return this.queues.keys();
  }
}
