/** The account's own events (sign-ins, keys, password, email, two-factor), newest first, a page at a time. */
import { useState } from 'preact/hooks';
import { useAccountActivity } from '../../api/account';
import { eventText } from '../../lib/event-text';
import { dateTime } from '../../lib/format';
import { ErrorText, Loading } from '../ui';

/** The properties worth reading (a key's identifier or fingerprint, an email's old and new), as one line. */
function detailOf(properties: Record<string, unknown>): string {
  const parts = Object.entries(properties)
    .filter(([, value]) => typeof value === 'string' && value !== '')
    .map(([name, value]) => `${name}: ${String(value)}`);
  return parts.length > 0 ? ` · ${parts.join(', ')}` : '';
}

export function AccountActivityCard() {
  const [page, setPage] = useState(1);
  const activity = useAccountActivity(page);
  const pages = activity.data?.pagination.total_pages ?? 1;
  return (
    <section aria-labelledby="account-activity-title">
      <h2 id="account-activity-title">Account activity</h2>
      {activity.isPending && <Loading what="account activity" />}
      <ErrorText error={activity.error} />
      {activity.data?.entries.length === 0 && <p class="muted">Nothing yet.</p>}
      {activity.data && activity.data.entries.length > 0 && (
        <ul class="rows activity" aria-label="Account activity">
          {activity.data.entries.map((entry) => (
            <li key={entry.id} class="entry">
              <div class="entry-top">
                <span>
                  {eventText(entry.event)} <span class="mono muted small">{entry.event}</span>
                </span>
                <time class="muted small" dateTime={entry.timestamp}>
                  {dateTime(entry.timestamp)}
                </time>
              </div>
              <span class="muted small">
                {entry.ip ? `From ${entry.ip}` : 'From an unknown address'}
                {entry.is_api ? ' · with an API key' : ''}
                {detailOf(entry.properties)}
              </span>
            </li>
          ))}
        </ul>
      )}
      {pages > 1 && (
        <nav class="pager" aria-label="Account activity pages">
          <button type="button" disabled={page <= 1} onClick={() => setPage(page - 1)}>
            Newer
          </button>
          <span class="muted small">
            Page {page} of {pages}
          </span>
          <button type="button" disabled={page >= pages} onClick={() => setPage(page + 1)}>
            Older
          </button>
        </nav>
      )}
    </section>
  );
}
