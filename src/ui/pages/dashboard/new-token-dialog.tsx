import { useEffect, useState } from "react";
import { MAX_TOKEN_LABEL } from "~/lib/protocol/token-messages.ts";
import { Button } from "~/ui/components/button.tsx";
import { Modal } from "~/ui/components/modal.tsx";

export const TOKEN_COPY_CONFIRM_MS = 3000;

/**
 * Shows a freshly generated token once; it cannot be fetched again after this dialog closes. A name for it (what it is
 * for) can be given here; `onClose` gets it ("" for none).
 */
export function NewTokenDialog({ token, onClose }: { token: string; onClose: (label: string) => void }) {
  const [isCopied, setIsCopied] = useState(false);
  const [label, setLabel] = useState("");
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
      onClose={() => onClose(label)}
      actions={
        <Button variant="secondary" onClick={() => onClose(label)}>
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
      <label className="mt-4 block text-zinc-300">
        Name <span className="text-zinc-500">(optional: what runs with it, e.g. "staging api")</span>
        <input
          value={label}
          maxLength={MAX_TOKEN_LABEL}
          onChange={(event) => setLabel(event.target.value)}
          className="mt-1.5 w-full rounded-md border border-zinc-800 bg-zinc-950 px-3 py-2 text-sm text-zinc-100 focus:border-zinc-600 focus:outline-none"
        />
      </label>
    </Modal>
  );
}
