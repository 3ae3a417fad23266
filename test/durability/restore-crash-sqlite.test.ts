/** docs/reference/backups-and-restores.md#durability's crash tests (restore-crash.cases.ts) on SQLite: with truncate, or both variants when PostgreSQL is not there. */
import { CLI_DIALECTS } from '../cli/helpers.js';
import { restoreCrashSuite, restoreCrashVariants } from './restore-crash.cases.js';

restoreCrashSuite('sqlite', restoreCrashVariants('sqlite', CLI_DIALECTS.includes('postgres')));
