/**
 * The server's Users section (docs/SUBUSERS.md, Pterodactyl's UsersContainer):
 * the subusers (not paginated, as Pterodactyl's list), seen with user.read;
 * Add (user.create), Edit (user.update) and Remove (user.delete) for those
 * who hold them. Adding or editing shows the permission picker in place of
 * the list.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { useSignedInUser } from '../api/session';
import { useSubusers, type Subuser } from '../api/subusers';
import { ErrorText, Loading } from '../components/ui';
import { SubuserForm } from '../components/users/subuser-form';
import { SubuserRow } from '../components/users/subuser-row';
import { useServer } from '../lib/server-context';

type Editing = { kind: 'add' } | { kind: 'edit'; subuser: Subuser };

export function UsersSection() {
  const { id, permissions } = useServer();
  const user = useSignedInUser();
  const canRead = permissions.can('user.read');
  const subusers = useSubusers(id, canRead);
  const [editing, setEditing] = useState<Editing | null>(null);
  // The session's user carries no uuid (Pterodactyl's AccountTransformer); emails are unique.
  const isSignedInUser = (subuser: Subuser) => subuser.email.toLowerCase() === user.email.toLowerCase();
  // When the form closes, focus goes back to the section rather than to the page's start.
  const headingRef = useRef<HTMLHeadingElement>(null);
  const wasEditing = useRef(false);
  useEffect(() => {
    if (!editing && wasEditing.current) headingRef.current?.focus();
    wasEditing.current = editing !== null;
  }, [editing]);

  if (!canRead) return <p class="muted">You may not see this server's subusers.</p>;
  return (
    <section aria-labelledby="users-title">
      <div class="section-head">
        <h2 id="users-title" ref={headingRef} tabIndex={-1}>
          Users
        </h2>
        {!editing && permissions.can('user.create') && (
          <div class="actions">
            <button type="button" class="primary" onClick={() => setEditing({ kind: 'add' })}>
              Add subuser
            </button>
          </div>
        )}
      </div>
      {editing ? (
        <SubuserForm
          key={editing.kind === 'edit' ? editing.subuser.uuid : 'new'}
          {...(editing.kind === 'edit' ? { subuser: editing.subuser } : {})}
          readOnly={editing.kind === 'edit' && !permissions.can('user.update')}
          onClose={() => setEditing(null)}
        />
      ) : (
        <>
          {subusers.isPending && <Loading what="the subusers" />}
          <ErrorText error={subusers.error} />
          {subusers.data?.length === 0 && <p class="muted">This server has no subusers yet.</p>}
          {subusers.data && subusers.data.length > 0 && (
            <ul class="rows" aria-label="Subusers">
              {subusers.data.map((subuser) => (
                <SubuserRow
                  key={subuser.uuid}
                  subuser={subuser}
                  own={isSignedInUser(subuser)}
                  onEdit={() => setEditing({ kind: 'edit', subuser })}
                />
              ))}
            </ul>
          )}
        </>
      )}
    </section>
  );
}
