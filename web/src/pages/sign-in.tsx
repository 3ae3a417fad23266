import { useState } from 'preact/hooks';
import { PasswordStep } from '../components/sign-in/password-step';
import { TwoFactorStep } from '../components/sign-in/two-factor-step';

/**
 * Sign-in (docs/reference/authentication.md): username or email and password;
 * for an account with two-factor, a second step asks for the authenticator's
 * code, or a recovery token.
 */
export function SignInPage() {
  const [confirmation, setConfirmation] = useState<string | null>(null);
  return (
    <main class="page narrow signin">
      <h1>Sign in to Quetzal</h1>
      {confirmation === null ? (
        <PasswordStep onSecondFactor={setConfirmation} />
      ) : (
        <TwoFactorStep confirmationToken={confirmation} onRestart={() => setConfirmation(null)} />
      )}
    </main>
  );
}
