/**
 * Start, Restart, Stop and Kill (POST /power), each enabled when the user
 * holds its permission and the state allows it; all wait while one is sent,
 * and a refusal (a 409 while installing, a 429 when too fast) is shown under
 * them.
 */
import { usePowerAction, type PowerSignal } from '../../api/console';
import type { Permissions } from '../../lib/permissions';
import { ErrorText } from '../ui';

const POWER: readonly { signal: PowerSignal; label: string; permission: string; when: (state: string | null) => boolean }[] = [
  {
    signal: 'start',
    label: 'Start',
    permission: 'control.start',
    when: (state) => state !== 'running' && state !== 'starting',
  },
  { signal: 'restart', label: 'Restart', permission: 'control.restart', when: (state) => state !== 'offline' },
  { signal: 'stop', label: 'Stop', permission: 'control.stop', when: (state) => state !== 'offline' },
  { signal: 'kill', label: 'Kill', permission: 'control.stop', when: (state) => state !== 'offline' },
];

interface PowerButtonsProps {
  server: string;
  state: string | null;
  permissions: Permissions;
  suspended: boolean;
  /** Whether the live socket said this user may not use it (then "checking" would never end). */
  socketUnavailable: boolean;
}

export function PowerButtons({ server, state, permissions, suspended, socketUnavailable }: PowerButtonsProps) {
  const power = usePowerAction(server);
  return (
    <>
      <div class="power" role="group" aria-label="Power">
        {POWER.map(({ signal, label, permission, when }) => {
          const allowed = permissions.can(permission);
          return (
            <button
              key={signal}
              type="button"
              class={signal === 'kill' || signal === 'stop' ? 'danger' : signal === 'start' ? 'primary' : ''}
              disabled={suspended || !allowed || !when(state) || power.isPending}
              title={allowed ? undefined : `You lack the ${permission} permission`}
              onClick={() => power.mutate(signal)}
            >
              {label}
            </button>
          );
        })}
      </div>
      {POWER.every(({ permission }) => !permissions.can(permission)) && (
        <p class="muted small">
          {permissions.known || socketUnavailable ? 'You may not change this server’s power state.' : 'Checking what you may do…'}
        </p>
      )}
      <ErrorText error={power.error} />
    </>
  );
}
