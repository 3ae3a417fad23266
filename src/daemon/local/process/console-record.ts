/**
 * A server's console log holds one of two shapes of line: conmon's
 * Kubernetes format for confined servers (`<RFC 3339 time> stdout|stderr P|F
 * <text>`, container/conmon.ts; `P` = the line goes on in the next record,
 * `F` = it ends here), or plain lines (an unconfined server's own output, and
 * lines the service adds itself). A server cannot forge the first shape in a
 * confined log: conmon writes the prefix of every record, and its text comes
 * after it.
 */
const K8S_RECORD = /^\d{4}-\d\d-\d\dT[^ ]+ (?:stdout|stderr) ([PF]) /;

export interface ConsoleRecord {
  readonly text: string;
  /** False for a `P` record: the line continues in the next record. */
  readonly ends: boolean;
}

export function parseConsoleRecord(raw: string): ConsoleRecord {
  const match = K8S_RECORD.exec(raw);
  if (!match) return { text: raw, ends: true };
  return { text: raw.slice(match[0].length), ends: match[1] === 'F' };
}

/** Raw log lines (oldest first) → the server's lines, `P` records joined; each cut at `maxChars`. */
export function joinConsoleRecords(rawLines: readonly string[], maxChars: number): string[] {
  const lines: string[] = [];
  let pending = '';
  for (const raw of rawLines) {
    const record = parseConsoleRecord(raw);
    if (pending.length < maxChars) pending += record.text.slice(0, maxChars - pending.length);
    if (!record.ends) continue;
    lines.push(pending);
    pending = '';
  }
  return lines;
}
