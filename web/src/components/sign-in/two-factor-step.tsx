/**
 * Sign-in's second step for an account with two-factor (docs/reference/authentication.md): the
 * authenticator's six-digit code, or one of the recovery tokens; a refused one is cleared.
 */
import { useState } from 'preact/hooks';
import { useCompleteSignIn } from '../../api/session';
import { ErrorText } from '../ui';

export function TwoFactorStep({ confirmationToken, onRestart }: { confirmationToken: string; onRestart: () => void }) {
  const complete = useCompleteSignIn(confirmationToken);
  const [useRecovery, setUseRecovery] = useState(false);
  const [value, setValue] = useState('');

  const submit = (event: Event) => {
    event.preventDefault();
    complete.mutate(useRecovery ? { recoveryToken: value } : { code: value }, { onError: () => setValue('') });
  };

  return (
    <form class="card stack" onSubmit={submit}>
      <p>This account uses two-factor authentication.</p>
      {/* Keyed: one input must not inherit the other's pattern and maxLength. */}
      {useRecovery ? (
        <label key="recovery">
          Recovery token
          <input
            name="recovery_token"
            autocomplete="off"
            required
            value={value}
            onInput={(e) => setValue(e.currentTarget.value)}
          />
        </label>
      ) : (
        <label key="code">
          Authentication code
          <input
            key="code"
            name="authentication_code"
            autocomplete="one-time-code"
            inputMode="numeric"
            pattern="[0-9]{6}"
            maxLength={6}
            required
            value={value}
            onInput={(e) => setValue(e.currentTarget.value)}
          />
        </label>
      )}
      <ErrorText error={complete.error} />
      <button type="submit" class="primary" disabled={complete.isPending}>
        Continue
      </button>
      <button
        type="button"
        onClick={() => {
          setUseRecovery(!useRecovery);
          setValue('');
          complete.reset();
        }}
      >
        {useRecovery ? 'Use an authentication code' : 'Use a recovery token'}
      </button>
      <button type="button" onClick={onRestart}>
        Start over
      </button>
    </form>
  );
}
