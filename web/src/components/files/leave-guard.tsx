import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'wouter-preact';
import { ConfirmDialog } from '../ui';

/**
 * Holds back leaving a page with unsaved changes: while `active`, a click on
 * any link of the console to this origin asks here first ("Leave without
 * saving?"), and closing or reloading the tab asks the browser's way. Told to
 * leave, it stands down for good and follows the link.
 */
export function LeaveGuard({ active, what }: { active: boolean; what: string }) {
  const [, navigate] = useLocation();
  const [leavingTo, setLeavingTo] = useState<string | null>(null);
  const [discarded, setDiscarded] = useState(false);
  const guarding = active && !discarded;

  useEffect(() => {
    if (!guarding) return;
    const beforeUnload = (event: BeforeUnloadEvent) => event.preventDefault();
    const click = (event: MouseEvent) => {
      const link = (event.target as Element | null)?.closest?.('a[href]');
      if (!(link instanceof HTMLAnchorElement) || link.target || link.origin !== location.origin || event.defaultPrevented)
        return;
      event.preventDefault();
      event.stopPropagation();
      setLeavingTo(link.pathname + link.search);
    };
    window.addEventListener('beforeunload', beforeUnload);
    document.addEventListener('click', click, true);
    return () => {
      window.removeEventListener('beforeunload', beforeUnload);
      document.removeEventListener('click', click, true);
    };
  }, [guarding]);

  return (
    <ConfirmDialog
      open={leavingTo !== null}
      title="Leave without saving?"
      confirmLabel="Leave"
      danger
      onConfirm={() => {
        const href = leavingTo;
        setLeavingTo(null);
        setDiscarded(true);
        // After the guard is gone (the next render); `~` is an address from the site's root.
        if (href) setTimeout(() => navigate(`~${href}`), 0);
      }}
      onCancel={() => setLeavingTo(null)}
    >
      <p>Your changes to {what} are not saved.</p>
    </ConfirmDialog>
  );
}
