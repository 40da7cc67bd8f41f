import { useEffect, useState } from "react";
import { Button } from "~/ui/components/button.tsx";
import { ErrorNotice } from "~/ui/components/error-notice.tsx";
import { api, describeError, type ErrorText } from "~/ui/lib/api.ts";

/** A namespace's explicit route patterns, one a line: they win over the templates ingest makes from then on. */
export function RoutePatterns({ namespaceId }: { namespaceId: string }) {
  const [text, setText] = useState<string | null>(null);
  const [error, setError] = useState<ErrorText | null>(null);
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    api("GetRoutePatterns", { namespaceId }).then(
      (r) => setText(r.patterns.join("\n")),
      (err) => setError(describeError(err)),
    );
  }, [namespaceId]);

  const save = async () => {
    setError(null);
    setSaved(false);
    try {
      const patterns = (text ?? "")
        .split("\n")
        .map((l) => l.trim())
        .filter(Boolean);
      const r = await api("SetRoutePatterns", { namespaceId, patterns });
      setText(r.patterns.join("\n"));
      setSaved(true);
    } catch (err) {
      setError(describeError(err));
    }
  };

  return (
    <details className="rounded-lg border border-zinc-800 bg-zinc-950 p-3 text-sm" data-testid="route-patterns">
      <summary className="cursor-pointer text-zinc-300">Route patterns</summary>
      <p className="mt-2 text-xs text-zinc-500">
        Ids, UUIDs, hashes, dates and numbers in paths become placeholders by themselves. Name the routes they miss here, one a line:{" "}
        <code>
          /repos/{"{owner}"}/{"{repo}"}
        </code>{" "}
        matches one segment per placeholder, <code>/static/{"{path*}"}</code> the rest of the path. They apply to requests captured from now
        on.
      </p>
      <textarea
        aria-label="Route patterns, one a line"
        value={text ?? ""}
        disabled={text === null}
        rows={4}
        onChange={(e) => {
          setText(e.target.value);
          setSaved(false);
        }}
        className="mt-2 w-full rounded-md border border-zinc-700 bg-zinc-900 p-2 font-mono text-xs text-zinc-100"
      />
      {error ? <ErrorNotice error={error} lead="The patterns were not saved:" className="mt-2" /> : null}
      <div className="mt-2 flex items-center gap-3">
        <Button variant="secondary" disabled={text === null} onClick={() => void save()}>
          Save patterns
        </Button>
        {saved ? (
          <span role="status" className="text-xs text-emerald-400">
            Saved
          </span>
        ) : null}
      </div>
    </details>
  );
}
