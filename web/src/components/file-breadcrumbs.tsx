import { Link } from 'wouter-preact';
import { crumbsOf, normalisePath } from '../lib/file-paths';

/**
 * Where a folder or a file of the volume is in the console (relative to the
 * server's page), and the breadcrumbs from the root to it, shared by the
 * folder view and the editor.
 */

export const filesHref = (directory: string) =>
  normalisePath(directory) === '/' ? '/files' : `/files?${new URLSearchParams({ dir: normalisePath(directory) })}`;
export const editorHref = (file: string) => `/files/edit?${new URLSearchParams({ file: normalisePath(file) })}`;

export function Breadcrumbs({ path, current }: { path: string; current: boolean }) {
  const crumbs = crumbsOf(path);
  return (
    <nav aria-label="Breadcrumb" class="crumbs">
      <ol>
        <li>
          <Link href={filesHref('/')} aria-current={current && crumbs.length === 0 ? 'page' : undefined}>
            Files
          </Link>
        </li>
        {crumbs.map((crumb, i) => (
          <li key={crumb.path}>
            {current && i === crumbs.length - 1 ? (
              <span aria-current="page">{crumb.name}</span>
            ) : (
              <Link href={filesHref(crumb.path)}>{crumb.name}</Link>
            )}
          </li>
        ))}
      </ol>
    </nav>
  );
}
