import { useCallback, useEffect, useRef, useState } from "react";

/** Copies text and reports "copied" for `ms` (2 s for links and commands). */
export function useCopy(ms = 2000): {
  copiedKey: string | null;
  failedKey: string | null;
  copy: (key: string, text: string) => Promise<void>;
} {
  const [copiedKey, setCopied] = useState<string | null>(null);
  const [failedKey, setFailed] = useState<string | null>(null);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);
  const copy = useCallback(
    async (key: string, text: string) => {
      clearTimeout(timer.current);
      try {
        await copyText(text);
        setFailed(null);
        setCopied(key);
      } catch {
        setCopied(null);
        setFailed(key);
      }
      timer.current = setTimeout(() => {
        setCopied(null);
        setFailed(null);
      }, ms);
    },
    [ms],
  );
  return { copiedKey, failedKey, copy };
}

export async function copyText(text: string): Promise<void> {
  if (navigator.clipboard?.writeText) {
    try {
      await navigator.clipboard.writeText(text);
      return;
    } catch {
      // fall through: some frames refuse the async clipboard
    }
  }
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.appendChild(area);
  area.select();
  const ok = document.execCommand?.("copy") ?? false;
  area.remove();
  if (!ok) throw new Error("copy refused");
}
