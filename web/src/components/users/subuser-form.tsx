/**
 * Adding a subuser by email, or changing (or, without user.update, only
 * viewing) a subuser's permissions, with the permission picker
 * (Pterodactyl's EditSubuserModal, shown in place of the list). The API's
 * refusal (a 422's detail, the owner's own email, a permission not held) is
 * shown beside the Save button.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from '../../api/client';
import {
  IMPLICIT_PERMISSION,
  useAddSubuser,
  usePermissionCatalogue,
  useUpdateSubuser,
  type PermissionCatalogue,
  type Subuser,
} from '../../api/subusers';
import { useServer } from '../../lib/server-context';
import { ErrorText, Loading } from '../ui';
import { PermissionPicker } from './permission-picker';

export interface SubuserFormProps {
  /** Absent: a new subuser. */
  subuser?: Subuser;
  /** Shown only, without Save (the signed-in user lacks user.update). */
  readOnly?: boolean;
  onClose(): void;
}

/** The picked keys, without the one the API adds by itself. */
const chosen = (permissions: readonly string[]) => new Set(permissions.filter((key) => key !== IMPLICIT_PERMISSION));

export function SubuserForm({ subuser, readOnly = false, onClose }: SubuserFormProps) {
  const catalogue = usePermissionCatalogue();
  const heading = subuser ? `${readOnly ? 'Permissions of' : 'Change permissions of'} ${subuser.email}` : 'Add a subuser';
  return (
    <div class="card subuser-form">
      {catalogue.isPending && <Loading what="the permissions" />}
      <ErrorText error={catalogue.error} />
      {catalogue.data && (
        <SubuserFormFields catalogue={catalogue.data} heading={heading} subuser={subuser} readOnly={readOnly} onClose={onClose} />
      )}
    </div>
  );
}

interface SubuserFormFieldsProps {
  catalogue: PermissionCatalogue;
  heading: string;
  subuser: Subuser | undefined;
  readOnly: boolean;
  onClose(): void;
}

function SubuserFormFields({ catalogue, heading, subuser, readOnly, onClose }: SubuserFormFieldsProps) {
  const { id, permissions } = useServer();
  const add = useAddSubuser(id);
  const update = useUpdateSubuser(id);
  const save = subuser ? update : add;
  const [email, setEmail] = useState('');
  const [selected, setSelected] = useState(() => chosen(subuser?.permissions ?? []));
  const headingRef = useRef<HTMLHeadingElement>(null);
  const emailRef = useRef<HTMLInputElement>(null);
  useEffect(() => (subuser ? headingRef.current : emailRef.current)?.focus(), [subuser]);

  const everyKey = Object.entries(catalogue).flatMap(([group, { keys }]) => Object.keys(keys).map((key) => `${group}.${key}`));
  const limited = everyKey.some((key) => key !== IMPLICIT_PERMISSION && !permissions.can(key));
  // A field error (the API's 422 names its field) marks the email input; a new edit clears the last refusal.
  const emailRejected = save.error instanceof ApiError && save.error.errors.some((error) => error.meta?.source_field === 'email');
  const edited = () => {
    if (save.isError) save.reset();
  };
  const submit = (event: Event) => {
    event.preventDefault();
    const picked = [...selected];
    if (subuser) update.mutate({ uuid: subuser.uuid, permissions: picked }, { onSuccess: onClose });
    else add.mutate({ email: email.trim(), permissions: picked }, { onSuccess: onClose });
  };

  return (
    <form class="stack" aria-labelledby="subuser-form-title" noValidate onSubmit={submit}>
      <h3 id="subuser-form-title" ref={headingRef} tabIndex={-1}>
        {heading}
      </h3>
      {!subuser && (
        <label>
          Email address
          <input
            ref={emailRef}
            type="email"
            autoComplete="off"
            value={email}
            required
            aria-invalid={emailRejected ? 'true' : undefined}
            aria-describedby={emailRejected ? 'subuser-email-about subuser-form-error' : 'subuser-email-about'}
            onInput={(event) => {
              setEmail(event.currentTarget.value);
              edited();
            }}
          />
        </label>
      )}
      {!subuser && (
        <p id="subuser-email-about" class="muted small">
          The account with this email becomes a subuser; an unknown email gets a new account, which can sign in once an
          administrator sets its password.
        </p>
      )}
      {limited && !readOnly && (
        <p class="notice">Only permissions your own account holds can be given to a subuser; the others are disabled.</p>
      )}
      <PermissionPicker
        catalogue={catalogue}
        selected={selected}
        onChange={(next) => {
          setSelected(next);
          edited();
        }}
        grantable={(key) => permissions.can(key)}
        readOnly={readOnly}
      />
      <div id="subuser-form-error">
        <ErrorText error={save.error} />
      </div>
      <div class="actions">
        <button type="button" onClick={onClose}>
          {readOnly ? 'Close' : 'Cancel'}
        </button>
        {!readOnly && (
          <button type="submit" class="primary" disabled={save.isPending}>
            {subuser ? 'Save permissions' : 'Add subuser'}
          </button>
        )}
      </div>
    </form>
  );
}
