/**
 * One subuser in the Users list (Pterodactyl's UserRow): email and username,
 * whether two-factor is on, how many permissions they hold (without the
 * implicit websocket.connect, as Pterodactyl counts), and Edit and Remove for
 * those allowed (never on the signed-in user's own entry, which the API
 * refuses). Remove asks first.
 */
import { useState } from 'preact/hooks';
import { IMPLICIT_PERMISSION, useRemoveSubuser, type Subuser } from '../../api/subusers';
import { useServer } from '../../lib/server-context';
import { ConfirmDialog } from '../ui';

export interface SubuserRowProps {
  subuser: Subuser;
  /** The signed-in user's own entry: no Edit or Remove. */
  own: boolean;
  onEdit(): void;
}

export function SubuserRow({ subuser, own, onEdit }: SubuserRowProps) {
  const { id, permissions } = useServer();
  const remove = useRemoveSubuser(id);
  const [confirming, setConfirming] = useState(false);
  const count = subuser.permissions.filter((permission) => permission !== IMPLICIT_PERMISSION).length;
  const canEdit = !own && permissions.can('user.update');
  const canView = !own && !canEdit;
  const canRemove = !own && permissions.can('user.delete');
  return (
    <li class="card row">
      <div class="row-main">
        <span class="row-title wrap">{subuser.email}</span>
        <span class="muted wrap">
          {subuser.username}
          {own && ' (you)'}
        </span>
      </div>
      <div class="row-meta">
        {subuser['2fa_enabled'] ? <span class="badge ok">2FA on</span> : <span class="badge bad">2FA off</span>}
        <span class="muted">
          {count} permission{count === 1 ? '' : 's'}
        </span>
      </div>
      {(canEdit || canView || canRemove) && (
        <div class="row-actions">
          {canEdit && (
            <button type="button" aria-label={`Edit ${subuser.email}`} onClick={onEdit}>
              Edit
            </button>
          )}
          {canView && (
            <button type="button" aria-label={`View permissions of ${subuser.email}`} onClick={onEdit}>
              View permissions
            </button>
          )}
          {canRemove && (
            <button type="button" class="danger" aria-label={`Remove ${subuser.email}`} onClick={() => setConfirming(true)}>
              Remove
            </button>
          )}
        </div>
      )}
      {canRemove && (
        <ConfirmDialog
          open={confirming}
          title={`Remove ${subuser.email}?`}
          confirmLabel="Remove subuser"
          danger
          busy={remove.isPending}
          error={remove.error}
          onConfirm={() => remove.mutate(subuser.uuid, { onSuccess: () => setConfirming(false) })}
          onCancel={() => {
            setConfirming(false);
            remove.reset();
          }}
        >
          <p>They lose access to this server at once; an open console or SFTP session ends within 30 seconds.</p>
        </ConfirmDialog>
      )}
    </li>
  );
}
