/**
 * The signed-in user's own account (docs/reference/web-console.md, docs/ACCOUNT.md): API keys,
 * two-factor, SSH keys, password, email and the account's activity, one card
 * each; every call is in api/account.ts.
 */
import { useSignedInUser } from '../api/session';
import { AccountActivityCard } from '../components/account/account-activity-card';
import { ApiKeysCard } from '../components/account/api-keys-card';
import { EmailCard } from '../components/account/email-card';
import { PasswordCard } from '../components/account/password-card';
import { SshKeysCard } from '../components/account/ssh-keys-card';
import { TwoFactorCard } from '../components/account/two-factor-card';

export function AccountPage() {
  const user = useSignedInUser();
  return (
    <>
      <h1>Account</h1>
      <p class="muted">
        Signed in as <strong>{user.username}</strong> ({user.email}).
      </p>
      <ApiKeysCard />
      <TwoFactorCard />
      <SshKeysCard />
      <PasswordCard />
      <EmailCard />
      <AccountActivityCard />
    </>
  );
}
