import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import type { FileObject } from '../api/files';
import { bytes, dateTime } from '../lib/format';

/**
 * A folder's entries as an ARIA grid that stays usable at 100,000 entries:
 * rows have one fixed height and only those in view (plus a margin) are in
 * the DOM, placed in a spacer as tall as every row together, so the
 * scrollbar is the folder's true length. The header's controls (select all,
 * sort) and the grid itself are the tab stops; in the grid the arrow keys,
 * Home, End and Page keys move the active row (aria-activedescendant,
 * scrolled into view, so it is always rendered), Space selects it, Enter
 * opens it, Ctrl/Cmd+A selects all, Escape clears the selection.
 */

type SortKey = 'name' | 'size' | 'modified';
export interface Sort {
  key: SortKey;
  descending: boolean;
}

/** Must match .file-row's height in styles.css. */
const ROW_HEIGHT = 44;
const MARGIN_ROWS = 10;

interface FileListProps {
  label: string;
  entries: readonly FileObject[];
  selected: ReadonlySet<string>;
  sort: Sort;
  onSort(sort: Sort): void;
  onSelect(names: ReadonlySet<string>): void;
  /** Where a folder's or a text file's name leads (null: it opens through onOpen, a download). */
  hrefOf(entry: FileObject): string | null;
  onOpen(entry: FileObject): void;
}

const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });

/** Folders first, then by the chosen column (names break ties). */
export function sortEntries(entries: readonly FileObject[], sort: Sort): FileObject[] {
  const direction = sort.descending ? -1 : 1;
  const byName = (a: FileObject, b: FileObject) => collator.compare(a.name, b.name);
  const by: Record<SortKey, (a: FileObject, b: FileObject) => number> = {
    name: byName,
    size: (a, b) => a.size - b.size || byName(a, b),
    modified: (a, b) => Date.parse(a.modified_at) - Date.parse(b.modified_at) || byName(a, b),
  };
  return [...entries].sort((a, b) => Number(a.is_file) - Number(b.is_file) || direction * by[sort.key](a, b));
}

export function FileList({ label, entries, selected, sort, onSort, onSelect, hrefOf, onOpen }: FileListProps) {
  const grid = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [height, setHeight] = useState(600);
  const [active, setActive] = useState(0);
  const frame = useRef(0);

  useLayoutEffect(() => {
    const element = grid.current;
    if (!element) return;
    const observer = new ResizeObserver(() => setHeight(element.clientHeight));
    observer.observe(element);
    setHeight(element.clientHeight);
    return () => observer.disconnect();
  }, []);
  // Another folder: back to its top.
  useEffect(() => {
    setActive(0);
    if (grid.current) grid.current.scrollTop = 0;
    setScrollTop(0);
  }, [label]);
  const count = entries.length;
  const activeIndex = Math.min(active, Math.max(0, count - 1));

  const first = Math.max(0, Math.floor(scrollTop / ROW_HEIGHT) - MARGIN_ROWS);
  const last = Math.min(count, Math.ceil((scrollTop + height) / ROW_HEIGHT) + MARGIN_ROWS);
  const rowId = (index: number) => `file-row-${index}`;

  const reveal = (index: number) => {
    const element = grid.current;
    if (!element) return;
    // Row i sits below the sticky header row, which covers the top ROW_HEIGHT of the view.
    const top = (index + 1) * ROW_HEIGHT;
    if (top - ROW_HEIGHT < element.scrollTop) element.scrollTop = top - ROW_HEIGHT;
    else if (top + ROW_HEIGHT > element.scrollTop + element.clientHeight)
      element.scrollTop = top + ROW_HEIGHT - element.clientHeight;
    setScrollTop(element.scrollTop);
  };
  const move = (index: number) => {
    const next = Math.max(0, Math.min(count - 1, index));
    setActive(next);
    reveal(next);
  };
  const toggle = (name: string) => {
    const next = new Set(selected);
    if (next.has(name)) next.delete(name);
    else next.add(name);
    onSelect(next);
  };
  const page = Math.max(1, Math.floor(height / ROW_HEIGHT) - 1);

  const onKeyDown = (event: KeyboardEvent) => {
    if (event.target !== grid.current || count === 0) return;
    const entry = entries[activeIndex];
    const keys: Record<string, () => void> = {
      ArrowDown: () => move(activeIndex + 1),
      ArrowUp: () => move(activeIndex - 1),
      PageDown: () => move(activeIndex + page),
      PageUp: () => move(activeIndex - page),
      Home: () => move(0),
      End: () => move(count - 1),
      ' ': () => entry && toggle(entry.name),
      Enter: () => entry && onOpen(entry),
      Escape: () => onSelect(new Set()),
    };
    const action = keys[event.key];
    if (event.key === 'a' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      onSelect(new Set(entries.map((e) => e.name)));
    } else if (action) {
      event.preventDefault();
      action();
    }
  };

  const allSelected = count > 0 && selected.size === count;
  const header = (key: SortKey, title: string, className: string) => (
    <div
      role="columnheader"
      class={className}
      aria-sort={sort.key === key ? (sort.descending ? 'descending' : 'ascending') : undefined}
    >
      <button type="button" class="sort" onClick={() => onSort({ key, descending: sort.key === key ? !sort.descending : false })}>
        {title}
        <span aria-hidden="true">{sort.key === key ? (sort.descending ? ' ↓' : ' ↑') : ''}</span>
      </button>
    </div>
  );

  const rows = [];
  for (let index = first; index < last; index++) {
    const entry = entries[index]!;
    const href = hrefOf(entry);
    const isSelected = selected.has(entry.name);
    rows.push(
      <div
        key={entry.name}
        id={rowId(index)}
        role="row"
        aria-rowindex={index + 2}
        aria-selected={isSelected}
        class={`file-row${isSelected ? ' selected' : ''}${index === activeIndex ? ' active' : ''}`}
        style={{ transform: `translateY(${index * ROW_HEIGHT}px)` }}
        onMouseDown={() => setActive(index)}
      >
        <div role="gridcell" class="col-check">
          <input
            type="checkbox"
            tabIndex={-1}
            aria-label={`Select ${entry.name}`}
            checked={isSelected}
            onChange={() => toggle(entry.name)}
          />
        </div>
        <div role="gridcell" class="col-name">
          <span class={entry.is_file ? 'file-icon' : 'file-icon folder'} aria-hidden="true" />
          {href !== null ? (
            <Link href={href} tabIndex={-1} aria-label={entry.is_file ? undefined : `Folder ${entry.name}`}>
              {entry.name}
            </Link>
          ) : (
            <button type="button" class="link" tabIndex={-1} onClick={() => onOpen(entry)}>
              {entry.name}
            </button>
          )}
          {entry.is_symlink && <span class="badge">link</span>}
        </div>
        <div role="gridcell" class="col-size">
          {entry.is_file ? bytes(entry.size) : '—'}
        </div>
        <div role="gridcell" class="col-modified">
          {dateTime(entry.modified_at)}
        </div>
        <div role="gridcell" class="col-mode mono">
          {entry.mode}
        </div>
      </div>,
    );
  }

  return (
    <div
      ref={grid}
      role="grid"
      tabIndex={0}
      aria-label={label}
      aria-rowcount={count + 1}
      aria-multiselectable="true"
      aria-activedescendant={count > 0 ? rowId(activeIndex) : undefined}
      class="file-grid"
      // As tall as its rows when they are few; a window of them (and a scrollbar) when they are many.
      style={{ height: `min(max(65vh, 16rem), 40rem, ${(count + 1) * ROW_HEIGHT + 2}px)` }}
      onKeyDown={onKeyDown}
      onScroll={(event) => {
        const top = event.currentTarget.scrollTop;
        cancelAnimationFrame(frame.current);
        frame.current = requestAnimationFrame(() => setScrollTop(top));
      }}
    >
      <div role="row" aria-rowindex={1} class="file-row file-head">
        <div role="columnheader" class="col-check">
          <input
            type="checkbox"
            aria-label="Select all"
            checked={allSelected}
            disabled={count === 0}
            onChange={() => onSelect(allSelected ? new Set() : new Set(entries.map((e) => e.name)))}
          />
        </div>
        {header('name', 'Name', 'col-name')}
        {header('size', 'Size', 'col-size')}
        {header('modified', 'Modified', 'col-modified')}
        <div role="columnheader" class="col-mode">
          Mode
        </div>
      </div>
      <div role="rowgroup" class="file-body" style={{ height: `${count * ROW_HEIGHT}px` }}>
        {rows}
      </div>
    </div>
  );
}
