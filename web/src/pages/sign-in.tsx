import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'preact/hooks';
import { SESSION_KEY, signIn } from '../api/session';
import { ErrorText } from '../components/ui';

/** SPEC 12's sign-in: username or email and password; the API's message when it refuses. */
export function SignInPage() {
  const client = useQueryClient();
  const [user, setUser] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await signIn(user.trim(), password);
      setPassword('');
      // The page asked for stays where it is (a deep link survives signing in).
      await client.invalidateQueries({ queryKey: SESSION_KEY });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="page narrow signin">
      <h1>Sign in to Quetzal</h1>
      <form class="card stack" onSubmit={(event) => void submit(event)}>
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
        <ErrorText error={error} />
        <button type="submit" class="primary" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}
