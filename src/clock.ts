/** The time source. Injected everywhere so tests can run time forward without sleeping. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
