/** The ten recovery tokens, shown once right after two-factor is turned on. */
export function RecoveryTokens({ tokens, onClose }: { tokens: readonly string[]; onClose(): void }) {
  return (
    <div class="card secret" role="status" aria-labelledby="recovery-title">
      <p id="recovery-title">
        <strong>Two-factor authentication is on.</strong> Store these recovery tokens somewhere safe: each signs you in once if
        you lose your authenticator. They are not shown again.
      </p>
      <ul class="recovery-tokens mono" aria-label="Recovery tokens">
        {tokens.map((token) => (
          <li key={token}>{token}</li>
        ))}
      </ul>
      <div class="actions">
        <button type="button" onClick={() => void navigator.clipboard?.writeText(tokens.join('\n'))}>
          Copy
        </button>
        <button type="button" class="primary" onClick={onClose}>
          I have saved these
        </button>
      </div>
    </div>
  );
}
