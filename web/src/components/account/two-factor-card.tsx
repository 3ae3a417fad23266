/**
 * Two-factor authentication (docs/ACCOUNT.md): when off, set it up (QR code,
 * the key for manual entry, a code and the password) and show the recovery
 * tokens once; when on, turn it off with the password.
 */
import { useState } from 'preact/hooks';
import { useDisableTwoFactor, useEnableTwoFactor, useStartTwoFactorSetup, useTwoFactorEnabled } from '../../api/account';
import { ConfirmDialog, ErrorText, Loading } from '../ui';
import { RecoveryTokens } from './recovery-tokens';
import { TwoFactorSetup } from './two-factor-setup';

export function TwoFactorCard() {
  const enabled = useTwoFactorEnabled();
  const start = useStartTwoFactorSetup();
  // Held here, not in the set-up form: the form goes once two-factor is on, the tokens it answered stay.
  const enable = useEnableTwoFactor();
  const closeSetup = () => {
    enable.reset();
    start.reset();
  };

  let body;
  if (enabled.isPending) body = <Loading what="the two-factor state" />;
  else if (enabled.data === true) body = <TurnOff />;
  else if (start.data) body = <TwoFactorSetup setup={start.data} enable={enable} onCancel={closeSetup} />;
  else body = <TurnOn start={start} />;

  return (
    <section aria-labelledby="two-factor-title">
      <h2 id="two-factor-title">Two-factor authentication</h2>
      {enable.data ? (
        <RecoveryTokens tokens={enable.data} onClose={closeSetup} />
      ) : (
        <div class="card stack two-factor-state">
          <ErrorText error={enabled.error} />
          {body}
        </div>
      )}
    </section>
  );
}

function TurnOn({ start }: { start: ReturnType<typeof useStartTwoFactorSetup> }) {
  return (
    <>
      <p>
        Two-factor authentication is <strong>off</strong>. With it on, signing in also asks for a code from an authenticator app
        on your phone.
      </p>
      <ErrorText error={start.error} />
      <div class="actions">
        <button type="button" class="primary" disabled={start.isPending} onClick={() => start.mutate()}>
          Set up two-factor
        </button>
      </div>
    </>
  );
}

function TurnOff() {
  const disable = useDisableTwoFactor();
  const [asking, setAsking] = useState(false);
  const [password, setPassword] = useState('');
  const close = () => {
    setAsking(false);
    setPassword('');
  };
  return (
    <>
      <p>
        Two-factor authentication is <strong>on</strong>: signing in asks for a code from your authenticator app, or a recovery
        token.
      </p>
      <div class="actions">
        <button
          type="button"
          class="danger"
          onClick={() => {
            disable.reset();
            setAsking(true);
          }}
        >
          Disable two-factor
        </button>
      </div>
      <ConfirmDialog
        open={asking}
        title="Disable two-factor authentication?"
        confirmLabel="Disable two-factor"
        danger
        busy={disable.isPending}
        error={disable.error}
        onConfirm={() => disable.mutate(password, { onSuccess: close })}
        onCancel={close}
      >
        <p>Signing in will ask for your password only.</p>
        <label>
          Your password
          <input
            type="password"
            autocomplete="current-password"
            required
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </label>
      </ConfirmDialog>
    </>
  );
}
