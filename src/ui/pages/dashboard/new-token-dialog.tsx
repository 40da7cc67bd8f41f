import { useEffect, useState } from "react";
import { Button } from "~/ui/components/button.tsx";
import { Modal } from "~/ui/components/modal.tsx";

export const TOKEN_COPY_CONFIRM_MS = 3000;

/** Shows a freshly generated token once; it cannot be fetched again after this dialog closes. */
export function NewTokenDialog({ token, onClose }: { token: string; onClose: () => void }) {
  const [isCopied, setIsCopied] = useState(false);
  useEffect(() => {
    if (!isCopied) return;
    const timer = setTimeout(() => setIsCopied(false), TOKEN_COPY_CONFIRM_MS);
    return () => clearTimeout(timer);
  }, [isCopied]);

  async function copy() {
    try {
      await navigator.clipboard.writeText(token);
      setIsCopied(true);
    } catch {
      window.alert("Could not copy: select the token and copy it by hand.");
    }
  }

  return (
    <Modal
      title="New token"
      onClose={onClose}
      actions={
        <Button variant="secondary" onClick={onClose}>
          Done
        </Button>
      }
    >
      <p className="text-amber-300/90">Copy this token now. For your security it cannot be viewed again after you close this dialog.</p>
      <div className="mt-3 flex items-stretch gap-2">
        <code
          data-testid="new-token"
          className="min-w-0 flex-1 rounded-md border border-zinc-800 bg-zinc-950 px-3 py-2 font-mono text-xs break-all text-zinc-100 select-all"
        >
          {token}
        </code>
        <Button variant="secondary" onClick={() => void copy()} aria-label={isCopied ? "Copied" : "Copy token"}>
          {isCopied ? "Copied!" : "Copy"}
        </Button>
      </div>
    </Modal>
  );
}
