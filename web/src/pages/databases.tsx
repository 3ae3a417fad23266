import { useState } from 'preact/hooks';
import { useDatabases, useDeleteDatabase, type ServerDatabase } from '../api/databases';
import { featureLimit } from '../api/feature-limits';
import { CreateDatabase } from '../components/databases/create-database';
import { DatabaseDetails } from '../components/databases/database-details';
import { DatabaseRow } from '../components/databases/database-row';
import { ConfirmDialog, ErrorText, Loading } from '../components/ui';
import { useServer } from '../lib/server-context';

/**
 * Databases (docs/DATABASES.md): the server's databases on the admin's
 * database hosts, a new one up to the server's limit, each one's connection
 * details and password (rotated on demand), and deletion after a confirmation.
 */
export function DatabasesSection() {
  const { id, server, permissions } = useServer();
  const databases = useDatabases(id, permissions.can('database.read'));
  const remove = useDeleteDatabase(id);
  const [detailsId, setDetailsId] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<ServerDatabase | null>(null);
  const limit = featureLimit(server, 'databases');

  if (!permissions.can('database.read')) return <p class="muted">You may not see this server's databases.</p>;
  if (databases.isPending) return <Loading what="the databases" />;
  if (databases.isError) return <ErrorText error={databases.error} />;
  const list = databases.data;
  // The row as last read, so the dialog follows a rotation or a deletion.
  const details = list.find((database) => database.id === detailsId) ?? null;
  return (
    <section aria-labelledby="databases-title">
      <div class="section-head">
        <h2 id="databases-title">Databases</h2>
      </div>
      {list.length === 0 ? (
        <p class="muted">{limit > 0 ? 'This server has no databases yet.' : 'Databases cannot be created for this server.'}</p>
      ) : (
        <ul class="rows" aria-label="Databases">
          {list.map((database) => (
            <DatabaseRow
              key={database.id}
              database={database}
              onDetails={(chosen) => setDetailsId(chosen.id)}
              onDelete={(chosen) => {
                remove.reset();
                setDeleting(chosen);
              }}
            />
          ))}
        </ul>
      )}
      <div class="card databases-footer">
        <CreateDatabase count={list.length} limit={limit} />
      </div>
      <DatabaseDetails database={details} onClose={() => setDetailsId(null)} />
      <ConfirmDialog
        open={deleting !== null}
        title="Delete this database?"
        confirmLabel="Delete database"
        danger
        busy={remove.isPending}
        error={remove.error}
        onCancel={() => setDeleting(null)}
        onConfirm={() => {
          if (deleting) remove.mutate(deleting.id, { onSuccess: () => setDeleting(null) });
        }}
      >
        <p>
          The database <span class="mono">{deleting?.name}</span> and its user are dropped on the database host, with everything
          in it. This cannot be undone.
        </p>
      </ConfirmDialog>
    </section>
  );
}
