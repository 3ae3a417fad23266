import type { Database } from '../../db/database.js';
import type { Authenticated } from '../../http/client-resolver.js';
import { displayException, ValidationError } from '../../http/errors.js';
import { verifyPassword } from '../users/passwords.js';
import { findPasswordHash } from '../users/users.repository.js';
import { recordActorEvent } from './account-activity.js';
import { emailTakenByOther, setEmail } from './account-security.repository.js';

// The WHATWG (HTML) definition of a valid e-mail address, as user:create accepts it.
const EMAIL =
  /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const EMAIL_MAX = 191;

/**
 * `PUT /account/email {email, password}` (Pterodactyl's UpdateEmailRequest
 * and AccountController::updateEmail): a wrong password is a 400 before the
 * email is looked at; then the email's rules (422: required, valid, at most
 * 191 characters, no other account's, in any letter case); then the change
 * and `user:account.email-changed` (old, new) in one transaction.
 */
export async function changeEmail(
  db: Database,
  auth: Authenticated,
  body: { email?: unknown; password?: unknown },
  now: number,
): Promise<void> {
  const userId = auth.user.id;
  const stored = await findPasswordHash(db, userId);
  if (typeof body.password !== 'string' || !(await verifyPassword(body.password, stored))) {
    throw displayException('The password provided was invalid for this account.');
  }
  const raw = body.email;
  if (raw === undefined || raw === null || (typeof raw === 'string' && raw.trim() === '')) {
    throw ValidationError.of('email', 'required', 'The email field is required.');
  }
  if (typeof raw !== 'string') throw ValidationError.of('email', 'string', 'The email field must be a string.');
  const email = raw.trim();
  if ([...email].length > EMAIL_MAX) {
    throw ValidationError.of('email', 'max', `The email field must not be greater than ${EMAIL_MAX} characters.`);
  }
  if (!EMAIL.test(email)) throw ValidationError.of('email', 'email', 'The email field must be a valid email address.');
  const taken = () => ValidationError.of('email', 'unique', 'The email has already been taken.');
  await db.transaction().execute(async (trx) => {
    if (await emailTakenByOther(trx, userId, email)) throw taken();
    try {
      await setEmail(trx, userId, email);
    } catch {
      // The unique index on users.email: another account took it meanwhile.
      throw taken();
    }
    if (email !== auth.user.email) {
      await recordActorEvent(trx, auth.actor, userId, 'user:account.email-changed', now, { old: auth.user.email, new: email });
    }
  });
}
