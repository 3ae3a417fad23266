import { sql } from 'kysely';

/**
 * Literal 0/1 for the scheduler's flag columns. Literal predicates (sql.lit)
 * match the partial indexes of migration 003; a bound parameter would hide
 * them from both planners.
 */
export const ONE = sql.lit(1);
export const ZERO = sql.lit(0);
