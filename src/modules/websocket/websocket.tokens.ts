import { createHash, randomBytes } from 'node:crypto';
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { JWT_ERRORS } from './websocket.frames.js';

/**
 * The websocket's token (docs/reference/power-and-console.md#websocket): an HS256 JWT signed with the service's
 * key, carrying what Pterodactyl's NodeJWTService puts in it for Wings:
 * `server_uuid`, `permissions`, `user_uuid`, `user_id` (deprecated there,
 * kept for clients that read it), `unique_id`, and iss (APP_URL), aud (the
 * node: here this service), jti (md5 of user id and server uuid, also in the
 * header), iat, nbf (5 minutes back, as Pterodactyl) and exp.
 */
export const TOKEN_LIFETIME_MS = 10 * 60 * 1000;
const NOT_BEFORE_SLACK_S = 5 * 60;

export interface WebsocketTokenInput {
  issuer: string;
  audience: string;
  serverUuid: string;
  user: { id: number; uuid: string };
  permissions: readonly string[];
  /** Milliseconds since the epoch (the injected clock). */
  now: number;
  lifetimeMs?: number;
}

export interface WebsocketClaims {
  serverUuid: string;
  userUuid: string;
  permissions: readonly string[];
  /** Milliseconds since the epoch. */
  expiresAt: number;
}

/** Why a token was refused, in Wings' words (JWT_ERRORS): the `jwt error` frame's argument. */
export class JwtError extends Error {}

export async function signWebsocketToken(key: Uint8Array, input: WebsocketTokenInput): Promise<string> {
  const jti = createHash('md5').update(`${input.user.id}${input.serverUuid}`).digest('hex');
  const issuedAt = Math.floor(input.now / 1000);
  return new SignJWT({
    server_uuid: input.serverUuid,
    permissions: [...input.permissions],
    user_uuid: input.user.uuid,
    user_id: input.user.id,
    unique_id: randomBytes(12).toString('base64url'),
  })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT', jti })
    .setIssuer(input.issuer)
    .setAudience(input.audience)
    .setJti(jti)
    .setIssuedAt(issuedAt)
    .setNotBefore(issuedAt - NOT_BEFORE_SLACK_S)
    .setExpirationTime(Math.floor((input.now + (input.lifetimeMs ?? TOKEN_LIFETIME_MS)) / 1000))
    .sign(key);
}

/** The token's claims, checked: signature, HS256 only, issuer, nbf, exp at `now`. Throws JwtError otherwise. */
export async function verifyWebsocketToken(
  key: Uint8Array,
  token: string,
  options: { issuer: string; now: number },
): Promise<WebsocketClaims> {
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, key, {
      algorithms: ['HS256'],
      issuer: options.issuer,
      currentDate: new Date(options.now),
      requiredClaims: ['exp', 'iat'],
    }));
  } catch (err) {
    throw new JwtError(reasonOf(err));
  }
  const { server_uuid: serverUuid, user_uuid: userUuid, permissions, exp } = payload;
  if (
    typeof serverUuid !== 'string' ||
    typeof userUuid !== 'string' ||
    !Array.isArray(permissions) ||
    !permissions.every((p): p is string => typeof p === 'string') ||
    typeof exp !== 'number'
  ) {
    throw new JwtError(JWT_ERRORS.malformed);
  }
  return { serverUuid: serverUuid.toLowerCase(), userUuid, permissions, expiresAt: exp * 1000 };
}

function reasonOf(err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return JWT_ERRORS.expired;
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    if (err.claim === 'nbf') return JWT_ERRORS.notYetValid;
    if (err.claim === 'iss') return JWT_ERRORS.issuer;
    return JWT_ERRORS.malformed;
  }
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return JWT_ERRORS.signature;
  return JWT_ERRORS.malformed;
}

/**
 * Whether a token's permission list grants `permission`: listed, or `*`
 * (what owners and admins get), which covers all but `admin.*` (Wings'
 * HasPermission).
 */
export function tokenGrants(permissions: readonly string[], permission: string): boolean {
  return permissions.includes(permission) || (!permission.startsWith('admin') && permissions.includes('*'));
}
