import { useEffect, useState } from 'preact/hooks';
import { useLocation, useSearch } from 'wouter-preact';
import { useActivity, type ActivityFilters } from '../api/activity';
import { query } from '../api/client';
import { useSignedInUser } from '../api/session';
import { eventText } from '../lib/event-text';
import { ErrorText, Loading } from '../components/ui';
import { dateTime } from '../lib/format';
import { useServer } from '../lib/server-context';

/** The server's activity log (docs/reference/activity.md#entries, docs/reference/activity.md#listing): filters for event, IP and actor, sort, pages, every entry's properties. */

type Filters = ActivityFilters;

const PER_PAGE = 25;
const EMPTY: Filters = { event: '', ip: '', actor: '', sort: '-timestamp' };

function propertyText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return value.join(', ');
  return JSON.stringify(value);
}

function fromSearch(search: string): { filters: Filters; page: number } {
  const params = new URLSearchParams(search);
  const sort = params.get('sort');
  const page = Number(params.get('page') ?? '1');
  return {
    filters: {
      event: params.get('event') ?? '',
      ip: params.get('ip') ?? '',
      actor: params.get('actor') ?? '',
      sort: sort === 'timestamp' ? 'timestamp' : '-timestamp',
    },
    page: Number.isInteger(page) && page >= 1 ? page : 1,
  };
}

function toSearch(filters: Filters, page: number): string {
  return query({
    event: filters.event.trim(),
    ip: filters.ip.trim(),
    actor: filters.actor,
    sort: filters.sort === EMPTY.sort ? undefined : filters.sort,
    page: page === 1 ? undefined : page,
  });
}

export function ActivitySection() {
  const { id } = useServer();
  const user = useSignedInUser();
  // The filters and page live in the address (back and forward walk through them, a link keeps them).
  const search = useSearch();
  const [location, navigate] = useLocation();
  const { filters, page } = fromSearch(search);
  const [draft, setDraft] = useState<Filters>(filters);
  useEffect(() => setDraft(fromSearch(search).filters), [search]);
  const go = (next: Filters, nextPage: number) => navigate(`${location}${toSearch(next, nextPage)}`);
  // Everyone seen acting in the log so far, offered as actor filters.
  const [actors, setActors] = useState<Map<string, string>>(
    () => new Map(user.uuid ? [[user.uuid, `${user.username} (you)`]] : []),
  );

  const entries = useActivity(id, filters, page, PER_PAGE);
  const shown = entries.data;
  useEffect(() => {
    if (!shown) return;
    setActors((known) => {
      const added = shown.data
        .map(({ attributes }) => attributes.relationships.actor.attributes)
        .filter((actor): actor is NonNullable<typeof actor> => actor !== null && !known.has(actor.uuid));
      if (added.length === 0) return known;
      const next = new Map(known);
      for (const actor of added) next.set(actor.uuid, actor.username);
      return next;
    });
  }, [shown]);

  const apply = (event: Event) => {
    event.preventDefault();
    go(draft, 1);
  };
  const reset = () => go(EMPTY, 1);
  const pagination = entries.data?.meta?.pagination;
  const totalPages = pagination?.total_pages ?? 1;

  return (
    <section aria-labelledby="activity-title">
      <h2 id="activity-title">Activity</h2>
      <form class="card filters" aria-label="Activity filters" onSubmit={apply}>
        <label>
          Event
          <input
            value={draft.event}
            placeholder="e.g. backup"
            onInput={(e) => setDraft({ ...draft, event: e.currentTarget.value })}
          />
        </label>
        <label>
          IP address
          <input
            value={draft.ip}
            placeholder="e.g. 127.0.0.1"
            onInput={(e) => setDraft({ ...draft, ip: e.currentTarget.value })}
          />
        </label>
        <label>
          Actor
          <select value={draft.actor} onChange={(e) => setDraft({ ...draft, actor: e.currentTarget.value })}>
            <option value="">Anyone</option>
            <option value="system">System</option>
            {[...actors].map(([uuid, name]) => (
              <option key={uuid} value={uuid}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Sort
          <select value={draft.sort} onChange={(e) => setDraft({ ...draft, sort: e.currentTarget.value as Filters['sort'] })}>
            <option value="-timestamp">Newest first</option>
            <option value="timestamp">Oldest first</option>
          </select>
        </label>
        <div class="actions">
          <button type="button" onClick={reset}>
            Clear filters
          </button>
          <button type="submit" class="primary">
            Apply filters
          </button>
        </div>
      </form>
      {entries.isPending && <Loading what="activity" />}
      <ErrorText error={entries.error} />
      {entries.data && entries.data.data.length === 0 && <p class="muted">No activity matches.</p>}
      {entries.data && entries.data.data.length > 0 && (
        <ol class="rows activity" aria-label="Activity entries" aria-busy={entries.isFetching ? 'true' : 'false'}>
          {entries.data.data.map(({ attributes: entry }) => {
            const actor = entry.relationships.actor.attributes;
            const properties = Object.entries(entry.properties);
            return (
              <li key={entry.id} class="card entry">
                <div class="entry-top">
                  <div class="entry-head">
                    <strong>{eventText(entry.event)}</strong>
                    <code class="muted event-key">{entry.event}</code>
                    {entry.is_api && <span class="badge">API key</span>}
                    {entry.has_additional_metadata && <span class="badge">More metadata</span>}
                  </div>
                  <div class="muted entry-meta">
                    <span>{actor ? actor.username : 'System'}</span>
                    {entry.ip && <span class="mono">{entry.ip}</span>}
                    <time dateTime={entry.timestamp}>{dateTime(entry.timestamp, undefined, true)}</time>
                  </div>
                </div>
                {entry.description && <p>{entry.description}</p>}
                {properties.length > 0 && (
                  <dl class="props">
                    {properties.map(([key, value]) => (
                      <div key={key}>
                        <dt>{key}</dt>
                        <dd class="mono">{propertyText(value)}</dd>
                      </div>
                    ))}
                  </dl>
                )}
              </li>
            );
          })}
        </ol>
      )}
      {pagination && (
        <nav class="pager" aria-label="Activity pages">
          <button type="button" disabled={page <= 1 || entries.isFetching} onClick={() => go(filters, page - 1)}>
            Previous page
          </button>
          <span aria-live="polite">
            Page {pagination.current_page} of {totalPages} · {pagination.total} entries
          </span>
          <button type="button" disabled={page >= totalPages || entries.isFetching} onClick={() => go(filters, page + 1)}>
            Next page
          </button>
        </nav>
      )}
    </section>
  );
}
