/** docs/reference/backups-and-restores.md#durability's crash tests (restore-crash.cases.ts) on PostgreSQL, when TEST_DATABASE_URL names one: without truncate. */
import { describe, it } from 'vitest';
import { CLI_DIALECTS } from '../cli/helpers.js';
import { restoreCrashSuite, restoreCrashVariants } from './restore-crash.cases.js';

if (CLI_DIALECTS.includes('postgres')) restoreCrashSuite('postgres', restoreCrashVariants('postgres', true));
else describe('a restore killed at any instant [postgres]', () => it.skip('needs TEST_DATABASE_URL', () => {}));
