/**
 * Who made a change: a user (through an API key) or the system (scheduler,
 * daemon). The HTTP layer builds one per authenticated request; services pass
 * it to the activity log with the change.
 */
export interface Actor {
  readonly userId: number | null;
  readonly apiKeyId: number | null;
  readonly ip: string | null;
}
