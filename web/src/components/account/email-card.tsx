/** Changing the account's email address, confirmed with the password. */
import { useState } from 'preact/hooks';
import { useChangeEmail } from '../../api/account';
import { useSignedInUser } from '../../api/session';
import { ErrorText } from '../ui';

export function EmailCard() {
  const user = useSignedInUser();
  const change = useChangeEmail();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');

  return (
    <section aria-labelledby="email-title">
      <h2 id="email-title">Email address</h2>
      <form
        class="card stack"
        onSubmit={(event) => {
          event.preventDefault();
          change.mutate(
            { email: email.trim(), password },
            {
              onSuccess: () => {
                setEmail('');
                setPassword('');
              },
            },
          );
        }}
      >
        <p class="muted email-now">
          Now <strong>{user.email}</strong>.
        </p>
        <label>
          New email address
          <input
            type="email"
            autocomplete="email"
            required
            maxLength={191}
            value={email}
            onInput={(e) => setEmail(e.currentTarget.value)}
          />
        </label>
        <label>
          Password (to confirm the change)
          <input
            type="password"
            autocomplete="current-password"
            required
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </label>
        <ErrorText error={change.error} />
        {change.isSuccess && (
          <p role="status" class="success">
            Your email address has been changed.
          </p>
        )}
        <div class="actions">
          <button type="submit" class="primary" disabled={change.isPending}>
            Change email
          </button>
        </div>
      </form>
    </section>
  );
}
