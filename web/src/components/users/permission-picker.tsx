/**
 * The permission picker of the Users section (Pterodactyl's PermissionTitleBox
 * and PermissionRow): one fieldset per group of GET /api/client/permissions,
 * with the group's description, a "select all" for the group, and each key as
 * a checkbox described by what it allows. A key the signed-in user may not
 * grant is disabled with a note; `websocket.connect` is shown checked and
 * disabled, because the API grants it to every subuser.
 */
import type { PermissionCatalogue } from '../../api/subusers';
import { IMPLICIT_PERMISSION } from '../../api/subusers';

export interface PermissionPickerProps {
  catalogue: PermissionCatalogue;
  selected: ReadonlySet<string>;
  onChange(next: Set<string>): void;
  /** May the signed-in user give this key (they hold it themselves)? */
  grantable(permission: string): boolean;
  /** Shown only: nothing can be changed (the user lacks user.update). */
  readOnly: boolean;
}

const title = (group: string) => group.charAt(0).toUpperCase() + group.slice(1);

export function PermissionPicker({ catalogue, selected, onChange, grantable, readOnly }: PermissionPickerProps) {
  return (
    <div class="permission-groups">
      {Object.entries(catalogue).map(([group, { description, keys }]) => {
        const permissions = Object.keys(keys).map((key) => `${group}.${key}`);
        const changeable = readOnly
          ? []
          : permissions.filter((permission) => permission !== IMPLICIT_PERMISSION && grantable(permission));
        const chosen = changeable.filter((permission) => selected.has(permission)).length;
        const setAll = (on: boolean) => {
          const next = new Set(selected);
          for (const permission of changeable) {
            if (on) next.add(permission);
            else next.delete(permission);
          }
          onChange(next);
        };
        const toggle = (permission: string, on: boolean) => {
          const next = new Set(selected);
          if (on) next.add(permission);
          else next.delete(permission);
          onChange(next);
        };
        return (
          <fieldset key={group} class="card permission-group">
            <legend>{title(group)}</legend>
            <div class="permission-group-head">
              <p class="muted small">{description}</p>
              {changeable.length > 0 && (
                <label class="check">
                  <input
                    type="checkbox"
                    checked={chosen === changeable.length}
                    indeterminate={chosen > 0 && chosen < changeable.length}
                    onChange={(event) => setAll(event.currentTarget.checked)}
                  />
                  Select all<span class="visually-hidden"> {group} permissions</span>
                </label>
              )}
            </div>
            {permissions.map((permission) => (
              <PermissionRow
                key={permission}
                permission={permission}
                description={keys[permission.slice(group.length + 1)] ?? ''}
                checked={permission === IMPLICIT_PERMISSION || selected.has(permission)}
                changeable={changeable.includes(permission)}
                note={noteFor(permission, readOnly, grantable)}
                onToggle={(on) => toggle(permission, on)}
              />
            ))}
          </fieldset>
        );
      })}
    </div>
  );
}

/** Why a key cannot be changed here, when that is not obvious (a read-only view needs no note on every key). */
function noteFor(permission: string, readOnly: boolean, grantable: (permission: string) => boolean): string | null {
  if (permission === IMPLICIT_PERMISSION) return 'Always granted: every subuser may open the console connection.';
  if (!readOnly && !grantable(permission)) return 'You do not hold this permission, so you cannot grant it.';
  return null;
}

interface PermissionRowProps {
  permission: string;
  description: string;
  checked: boolean;
  changeable: boolean;
  note: string | null;
  onToggle(on: boolean): void;
}

function PermissionRow({ permission, description, checked, changeable, note, onToggle }: PermissionRowProps) {
  const id = `permission-${permission}`;
  return (
    <div class={changeable ? 'permission-row' : 'permission-row fixed'}>
      <input
        type="checkbox"
        id={id}
        checked={checked}
        disabled={!changeable}
        aria-describedby={`${id}-about`}
        onChange={(event) => onToggle(event.currentTarget.checked)}
      />
      <div>
        <label for={id} class="mono">
          {permission}
        </label>
        <p id={`${id}-about`} class="muted small">
          {description}
          {note && <span class="permission-note"> {note}</span>}
        </p>
      </div>
    </div>
  );
}
