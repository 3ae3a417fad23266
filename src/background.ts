/**
 * Work that outlives the request that started it (a restore, a backup). Tracked
 * so that shutdown and tests can wait for it to settle.
 */
export class BackgroundJobs {
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly log: { error(obj: object, msg: string): void }) {}

  run(name: string, work: () => Promise<void>): void {
    const job: Promise<void> = work()
      .catch((err: unknown) => this.log.error({ err, job: name }, 'background job failed'))
      .finally(() => this.running.delete(job));
    this.running.add(job);
  }

  /** Resolves once no job is running (including jobs started meanwhile). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }
}
