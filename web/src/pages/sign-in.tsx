import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'preact/hooks';
import { completeSignIn, SESSION_KEY, signIn } from '../api/session';
import { ErrorText } from '../components/ui';

/**
 * Sign-in (docs/reference/authentication.md): username or email and password;
 * for an account with two-factor, a second step asks for the authenticator's
 * code, or a recovery token. The API's message when it refuses.
 */
export function SignInPage() {
  const [confirmation, setConfirmation] = useState<string | null>(null);
  return (
    <main class="page narrow signin">
      <h1>Sign in to Quetzal</h1>
      {confirmation === null ? (
        <PasswordStep onSecondFactor={setConfirmation} />
      ) : (
        <CheckpointStep token={confirmation} onRestart={() => setConfirmation(null)} />
      )}
    </main>
  );
}

function useSignedIn() {
  const client = useQueryClient();
  // The page asked for stays where it is (a deep link survives signing in).
  return () => client.invalidateQueries({ queryKey: SESSION_KEY });
}

function PasswordStep({ onSecondFactor }: { onSecondFactor: (token: string) => void }) {
  const signedIn = useSignedIn();
  const [user, setUser] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const answer = await signIn(user.trim(), password);
      setPassword('');
      if (!answer.complete && answer.confirmation_token) onSecondFactor(answer.confirmation_token);
      else await signedIn();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
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
  );
}

function CheckpointStep({ token, onRestart }: { token: string; onRestart: () => void }) {
  const signedIn = useSignedIn();
  const [useRecovery, setUseRecovery] = useState(false);
  const [value, setValue] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await completeSignIn(token, useRecovery ? { recoveryToken: value.trim() } : { code: value.trim() });
      await signedIn();
    } catch (err) {
      setError(err);
      setValue('');
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="card stack" onSubmit={(event) => void submit(event)}>
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
      <ErrorText error={error} />
      <button type="submit" class="primary" disabled={busy}>
        Continue
      </button>
      <button
        type="button"
        onClick={() => {
          setUseRecovery(!useRecovery);
          setValue('');
          setError(null);
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
