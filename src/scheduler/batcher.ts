/**
 * Gathers work submitted at about the same time and hands it over in batches:
 * everything submitted within one turn of the event loop (and whatever arrives
 * while a batch is being written) goes into the next batch, up to `max` items.
 * One batch at a time. A lone submission is written on the next turn, so an
 * idle scheduler pays no latency for this.
 */
export class Batcher<T, R> {
  private queue: { item: T; resolve: (result: R) => void; reject: (err: unknown) => void }[] = [];
  private scheduled = false;
  private flushing = false;
  private holds = 0;

  constructor(
    private readonly max: number,
    private readonly write: (items: T[]) => Promise<R[]>,
  ) {}

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** Holds batches back until the returned function is called (a batch being written finishes). */
  hold(): () => void {
    this.holds += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.holds -= 1;
      this.schedule();
    };
  }

  private schedule() {
    if (this.scheduled || this.flushing || this.holds > 0 || this.queue.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.queue.length > 0 && this.holds === 0) {
        const batch = this.queue.splice(0, this.max);
        try {
          const results = await this.write(batch.map((entry) => entry.item));
          batch.forEach((entry, i) => entry.resolve(results[i]!));
        } catch (err) {
          for (const entry of batch) entry.reject(err);
        }
      }
    } finally {
      this.flushing = false;
      // Whatever arrived or was held back meanwhile.
      this.schedule();
    }
  }
}
