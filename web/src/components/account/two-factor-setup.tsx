/** Setting two-factor up: the QR code, its key to type by hand, then a code from the app and the password. */
import { useState } from 'preact/hooks';
import type { TwoFactorSetup as Setup, useEnableTwoFactor } from '../../api/account';
import { ErrorText } from '../ui';
import { QrCode } from './qr-code';

interface Props {
  setup: Setup;
  enable: ReturnType<typeof useEnableTwoFactor>;
  onCancel(): void;
}

export function TwoFactorSetup({ setup, enable, onCancel }: Props) {
  const [code, setCode] = useState('');
  const [password, setPassword] = useState('');
  const ready = /^\d{6}$/.test(code) && password !== '';
  return (
    <form
      class="stack two-factor-setup"
      aria-labelledby="two-factor-setup-title"
      onSubmit={(event) => {
        event.preventDefault();
        enable.mutate({ code, password });
      }}
    >
      <h3 id="two-factor-setup-title">Set up two-factor</h3>
      <div class="two-factor-scan">
        <QrCode text={setup.image_url_data} label="QR code for your authenticator app" />
        <div class="stack">
          <p>Scan the QR code with your authenticator app, or type this key into it:</p>
          <p>
            <code id="two-factor-secret" class="totp-secret">
              {setup.secret.match(/.{1,4}/g)?.join(' ') ?? setup.secret}
            </code>
          </p>
          <p class="muted small">Then enter the 6-digit code the app shows, and your password.</p>
        </div>
      </div>
      <label>
        Code from the app
        <input
          class="mono"
          type="text"
          inputMode="numeric"
          autocomplete="one-time-code"
          pattern="\d{6}"
          maxLength={6}
          required
          value={code}
          onInput={(e) => setCode(e.currentTarget.value.replace(/\s+/g, ''))}
        />
      </label>
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
      <ErrorText error={enable.error} />
      <div class="actions">
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" class="primary" disabled={enable.isPending || !ready}>
          Turn on two-factor
        </button>
      </div>
    </form>
  );
}
