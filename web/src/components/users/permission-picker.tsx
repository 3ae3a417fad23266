/**
 * The permission picker of the Users section (Pterodactyl's PermissionTitleBox
 * and PermissionRow): one fieldset per group of GET /api/client/permissions,
 * with the group's description, a "select all" for the group, and each key as
 * a checkbox described by what it allows. A key the signed-in user may not
 * grant is disabled with a note (one note for a group they hold none of);
 * `websocket.connect` is shown checked and disabled, because the API grants it
 * to every subuser.
 */
import { IMPLICIT_PERMISSION, type PermissionGroup, type PermissionCatalogue } from '../../api/subusers';

export interface PermissionPickerProps {
  catalogue: PermissionCatalogue;
  selected: ReadonlySet<string>;
  onChange(next: Set<string>): void;
  /** May the signed-in user give this key (they hold it themselves)? */
  grantable(permission: string): boolean;
  /** Shown only: nothing can be changed (the user lacks user.update). */
  readOnly: boolean;
}

const IMPLICIT_NOTE = 'Always granted: every subuser may open the console connection.';
const NOT_HELD_NOTE = 'You do not hold this permission, so you cannot grant it.';
const NONE_HELD_NOTE = 'You hold none of these permissions, so you cannot grant them.';

export function PermissionPicker(props: PermissionPickerProps) {
  return (
    <div class="permission-groups">
      {Object.entries(props.catalogue).map(([name, group]) => (
        <PermissionGroupBox key={name} name={name} group={group} {...props} />
      ))}
    </div>
  );
}

/** The new selection with `permissions` all added (`on`) or all taken out. */
function withAll(selected: ReadonlySet<string>, permissions: readonly string[], on: boolean): Set<string> {
  const next = new Set(selected);
  for (const permission of permissions) {
    if (on) next.add(permission);
    else next.delete(permission);
  }
  return next;
}

function PermissionGroupBox({
  name,
  group,
  selected,
  onChange,
  grantable,
  readOnly,
}: PermissionPickerProps & { name: string; group: PermissionGroup }) {
  const permissions = Object.keys(group.keys).map((key) => `${name}.${key}`);
  const implicitOnly = permissions.every((permission) => permission === IMPLICIT_PERMISSION);
  const changeable = readOnly
    ? []
    : permissions.filter((permission) => permission !== IMPLICIT_PERMISSION && grantable(permission));
  const chosen = changeable.filter((permission) => selected.has(permission)).length;
  // Held none of: one note for the group rather than the same sentence on every key.
  const noneHeld = !readOnly && !implicitOnly && changeable.length === 0;
  const groupNoteId = `permission-group-${name}-note`;
  const noteFor = (permission: string): string | null => {
    if (permission === IMPLICIT_PERMISSION) return IMPLICIT_NOTE;
    if (!readOnly && !noneHeld && !changeable.includes(permission)) return NOT_HELD_NOTE;
    return null;
  };
  return (
    <fieldset class="card permission-group">
      <legend>{name.charAt(0).toUpperCase() + name.slice(1)}</legend>
      <div class="permission-group-head">
        <p class="muted small">{group.description}</p>
        {noneHeld && (
          <p id={groupNoteId} class="muted small permission-note">
            {NONE_HELD_NOTE}
          </p>
        )}
        {changeable.length > 0 && (
          <label class="check">
            <input
              type="checkbox"
              checked={chosen === changeable.length}
              indeterminate={chosen > 0 && chosen < changeable.length}
              onChange={(event) => onChange(withAll(selected, changeable, event.currentTarget.checked))}
            />
            Select all<span class="visually-hidden"> {name} permissions</span>
          </label>
        )}
      </div>
      {permissions.map((permission) => (
        <PermissionRow
          key={permission}
          permission={permission}
          description={group.keys[permission.slice(name.length + 1)] ?? ''}
          checked={permission === IMPLICIT_PERMISSION || selected.has(permission)}
          changeable={changeable.includes(permission)}
          note={noteFor(permission)}
          describedBy={noneHeld ? groupNoteId : null}
          onToggle={(on) => onChange(withAll(selected, [permission], on))}
        />
      ))}
    </fieldset>
  );
}

interface PermissionRowProps {
  permission: string;
  description: string;
  checked: boolean;
  changeable: boolean;
  note: string | null;
  /** Another element that describes it too (the group's note). */
  describedBy: string | null;
  onToggle(on: boolean): void;
}

function PermissionRow({ permission, description, checked, changeable, note, describedBy, onToggle }: PermissionRowProps) {
  const id = `permission-${permission}`;
  return (
    <div class={changeable ? 'permission-row' : 'permission-row fixed'}>
      <input
        type="checkbox"
        id={id}
        checked={checked}
        disabled={!changeable}
        aria-describedby={describedBy ? `${id}-about ${describedBy}` : `${id}-about`}
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
