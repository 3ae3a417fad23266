import ignore, { type Ignore } from 'ignore';

/**
 * Gitignore-syntax matching of volume-relative paths, as Wings applies a
 * backup's ignored files. The `ignore` package caches every path it has tested;
 * the matcher starts a fresh instance now and then so that cache stays bounded.
 */
export class IgnoreMatcher {
  private static readonly TESTS_PER_INSTANCE = 10_000;
  private readonly patterns: string[];
  private current: Ignore | null = null;
  private tests = 0;

  constructor(patterns: readonly string[]) {
    this.patterns = patterns.map((pattern) => pattern.replace(/\r$/, '')).filter((pattern) => pattern.trim() !== '');
  }

  /** `relativePath` uses '/' separators and no leading './'. */
  ignores(relativePath: string, isDirectory: boolean): boolean {
    if (this.patterns.length === 0) return false;
    if (this.current === null || this.tests >= IgnoreMatcher.TESTS_PER_INSTANCE) {
      this.current = ignore({ allowRelativePaths: true }).add(this.patterns);
      this.tests = 0;
    }
    this.tests += 1;
    // A trailing '/' is how the package tells a directory, so `cache/` matches folders only.
    return this.current.ignores(isDirectory ? `${relativePath}/` : relativePath);
  }
}
