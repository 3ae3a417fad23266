import { Component, type ComponentChildren } from 'preact';
import { useEffect, useId, useRef } from 'preact/hooks';
import { messageOf } from '../api/client';

/** An API error, shown where it happened (docs/reference/web-console.md: errors are shown, not swallowed). */
export function ErrorText({ error }: { error: unknown }) {
  if (error === null || error === undefined || error === false) return null;
  return (
    <p role="alert" class="error">
      {messageOf(error)}
    </p>
  );
}

export function Notice({ children }: { children: ComponentChildren }) {
  return (
    <p role="status" class="notice">
      {children}
    </p>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" role="status" aria-live="polite">
      Loading {what}…
    </p>
  );
}

interface ConfirmProps {
  open: boolean;
  title: string;
  confirmLabel: string;
  danger?: boolean;
  busy?: boolean;
  error?: unknown;
  onConfirm(): void;
  onCancel(): void;
  children?: ComponentChildren;
}

/**
 * A modal with the browser's own <dialog>, shown while `open`: focus is
 * trapped, Escape asks `onCancel`, the heading given `titleId` names it.
 */
export function Modal({
  open,
  class: className,
  onCancel,
  children,
}: {
  open: boolean;
  class?: string;
  onCancel(): void;
  /** Given the id its heading must carry (the dialog's accessible name). */
  children: (titleId: string) => ComponentChildren;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) dialog.showModal();
    if (!open && dialog.open) dialog.close();
  }, [open]);
  return (
    <dialog
      ref={ref}
      class={className ? `dialog ${className}` : 'dialog'}
      aria-labelledby={titleId}
      onCancel={(event) => {
        event.preventDefault();
        onCancel();
      }}
    >
      {children(titleId)}
    </dialog>
  );
}

/** A modal question: Cancel, or the confirming button (a request's error shown above them). */
export function ConfirmDialog({ open, title, confirmLabel, danger, busy, error, onConfirm, onCancel, children }: ConfirmProps) {
  return (
    <Modal open={open} onCancel={onCancel}>
      {(titleId) => (
        <form
          onSubmit={(event) => {
            event.preventDefault();
            onConfirm();
          }}
        >
          <h2 id={titleId}>{title}</h2>
          {children}
          <ErrorText error={error} />
          <div class="actions">
            <button type="button" onClick={onCancel}>
              Cancel
            </button>
            <button type="submit" class={danger ? 'danger' : 'primary'} disabled={busy}>
              {confirmLabel}
            </button>
          </div>
        </form>
      )}
    </Modal>
  );
}

/**
 * A small line graph of recent samples, drawn as SVG (no chart library),
 * scaled to its own peak (with headroom) so that small changes show; `floor`
 * keeps an idle server's noise from filling the graph.
 */
export function Sparkline({ values, floor, label }: { values: readonly number[]; floor: number; label: string }) {
  const width = 120;
  const height = 36;
  const top = Math.max(floor, ...values.map((value) => value * 1.25), 1e-9);
  const step = values.length > 1 ? width / (values.length - 1) : width;
  const points = values.map((value, i) => `${(i * step).toFixed(2)},${(height - (value / top) * (height - 2) - 1).toFixed(2)}`);
  return (
    <svg class="sparkline" role="img" aria-label={label} viewBox={`0 0 ${width} ${height}`} preserveAspectRatio="none">
      {points.length > 1 && (
        <>
          <polygon class="sparkline-area" points={`0,${height} ${points.join(' ')} ${width},${height}`} />
          <polyline class="sparkline-line" points={points.join(' ')} vector-effect="non-scaling-stroke" />
        </>
      )}
    </svg>
  );
}

const STATE_LABELS: Record<string, string> = {
  offline: 'Offline',
  starting: 'Starting',
  running: 'Running',
  stopping: 'Stopping',
};

export function StateBadge({ state }: { state: string | null | undefined }) {
  const known = state ?? 'unknown';
  return <span class={`badge state-${known}`}>{STATE_LABELS[known] ?? 'Unknown'}</span>;
}

/**
 * What a page that failed to render shows instead of a blank screen: most
 * often a page's chunk that a newer build replaced while this tab was open.
 */
export class PageErrorBoundary extends Component<{ children: ComponentChildren }, { error: unknown }> {
  override state = { error: null as unknown };

  override componentDidCatch(error: unknown) {
    this.setState({ error });
  }

  override render() {
    if (this.state.error === null) return this.props.children;
    return (
      <div class="card stack" role="alert">
        <p>
          This page could not be shown ({messageOf(this.state.error)}). The console may have been updated since this tab opened.
        </p>
        <div class="actions">
          <button type="button" class="primary" onClick={() => location.reload()}>
            Reload
          </button>
        </div>
      </div>
    );
  }
}
