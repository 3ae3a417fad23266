/** Polling until something holds: fast at first, then slower (each poll may read every /proc/<pid>/stat). */

/** Polls for a process group to end start fast and slow down: each poll may read every /proc/<pid>/stat. */
const POLL_FIRST_MS = 25;
const POLL_MAX_MS = 250;

export async function waitUntil(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; !(await check()); attempt++) {
    if (Date.now() >= deadline) return false;
    await sleep(Math.min(pollDelay(attempt), Math.max(deadline - Date.now(), 1)));
  }
  return true;
}

export function pollDelay(attempt: number): number {
  return Math.min(POLL_FIRST_MS * 2 ** Math.min(attempt, 4), POLL_MAX_MS);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
