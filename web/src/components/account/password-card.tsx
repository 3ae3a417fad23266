/** Changing the account's password: the current one, the new one twice. */
import { useState } from 'preact/hooks';
import { useChangePassword } from '../../api/account';
import { useSignedInUser } from '../../api/session';
import { ErrorText } from '../ui';

export function PasswordCard() {
  const user = useSignedInUser();
  const change = useChangePassword();
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [confirmation, setConfirmation] = useState('');

  return (
    <section aria-labelledby="password-title">
      <h2 id="password-title">Change password</h2>
      <form
        class="card stack"
        onSubmit={(event) => {
          event.preventDefault();
          change.mutate(
            { current, next, confirmation },
            {
              onSuccess: () => {
                setCurrent('');
                setNext('');
                setConfirmation('');
              },
            },
          );
        }}
      >
        {/* For password managers: which account the new password belongs to. */}
        <input type="text" name="username" autocomplete="username" value={user.username} readOnly hidden />
        <label>
          Current password
          <input
            type="password"
            autocomplete="current-password"
            required
            value={current}
            onInput={(e) => setCurrent(e.currentTarget.value)}
          />
        </label>
        <label>
          New password
          <input
            type="password"
            autocomplete="new-password"
            required
            value={next}
            onInput={(e) => setNext(e.currentTarget.value)}
          />
        </label>
        <label>
          Confirm new password
          <input
            type="password"
            autocomplete="new-password"
            required
            value={confirmation}
            onInput={(e) => setConfirmation(e.currentTarget.value)}
          />
        </label>
        <ErrorText error={change.error} />
        {change.isSuccess && (
          <p role="status" class="success">
            Your password has been changed.
          </p>
        )}
        <div class="actions">
          <button type="submit" class="primary" disabled={change.isPending}>
            Change password
          </button>
        </div>
      </form>
    </section>
  );
}
