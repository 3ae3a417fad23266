/** Sign-in's first step: username or email and password; the API's message when it refuses (docs/reference/authentication.md). */
import { useState } from 'preact/hooks';
import { useSignIn } from '../../api/session';
import { ErrorText } from '../ui';

export function PasswordStep({ onSecondFactor }: { onSecondFactor: (confirmationToken: string) => void }) {
  const signIn = useSignIn();
  const [user, setUser] = useState('');
  const [password, setPassword] = useState('');

  const submit = (event: Event) => {
    event.preventDefault();
    signIn.mutate(
      { user, password },
      {
        onSuccess: (answer) => {
          setPassword('');
          if (!answer.complete && answer.confirmation_token) onSecondFactor(answer.confirmation_token);
        },
      },
    );
  };

  return (
    <form class="card stack" onSubmit={submit}>
      <label>
        Username or email
        <input name="user" autocomplete="username" required value={user} onInput={(e) => setUser(e.currentTarget.value)} />
      </label>
      <label>
        Password
        <input
          name="password"
          type="password"
          autocomplete="current-password"
          required
          value={password}
          onInput={(e) => setPassword(e.currentTarget.value)}
        />
      </label>
      <ErrorText error={signIn.error} />
      <button type="submit" class="primary" disabled={signIn.isPending}>
        Sign in
      </button>
    </form>
  );
}
