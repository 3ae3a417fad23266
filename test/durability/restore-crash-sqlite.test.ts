/** SPEC 9's crash tests (restore-crash.cases.ts) on SQLite. */
import { restoreCrashSuite } from './restore-crash.cases.js';

restoreCrashSuite('sqlite');
