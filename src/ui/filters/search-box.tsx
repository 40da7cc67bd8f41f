import { useState } from "react";
import { parseFilterChipList } from "~/lib/filter/parse.ts";
import { searchCondition } from "~/lib/filter/search.ts";
import { filterErrorText } from "~/ui/live/frame-messages.ts";

/**
 * "Search headers and bodies": the text typed becomes one filter (request and response bodies and headers, any case)
 * added to the filters in the input beside it, where it can be read, edited or removed like any other.
 */
export function SearchBox({ chips, onChips }: { chips: readonly string[]; onChips: (chips: string[]) => void }) {
  const [text, setText] = useState("");
  const [error, setError] = useState<string | null>(null);

  const submit = () => {
    const made = searchCondition(text);
    if (!made.ok) {
      setError(made.message);
      return;
    }
    if (chips.includes(made.condition)) {
      setText("");
      setError(null);
      return;
    }
    const next = [...chips, made.condition];
    const parsed = parseFilterChipList(next);
    if (!parsed.ok) {
      setError(filterErrorText(parsed.error.message, parsed.error.position));
      return;
    }
    setText("");
    setError(null);
    onChips(next);
  };

  return (
    <form
      aria-label="Content search"
      className="flex w-full flex-col gap-1"
      onSubmit={(e) => {
        e.preventDefault();
        submit();
      }}
    >
      <div className="flex gap-1.5">
        <input
          type="search"
          aria-label="Search headers and bodies"
          aria-invalid={error !== null}
          aria-describedby={error ? "search-error" : undefined}
          placeholder="Search headers and bodies"
          spellCheck={false}
          autoComplete="off"
          className={`min-w-0 flex-1 rounded-lg border bg-zinc-900 px-3 py-1.5 text-sm text-zinc-100 placeholder:text-zinc-500 outline-none ${error ? "border-red-500/70" : "border-zinc-700 focus:border-zinc-500"}`}
          value={text}
          onChange={(e) => {
            setText(e.target.value);
            setError(null);
          }}
        />
        <button
          type="submit"
          className="rounded-lg border border-zinc-700 bg-zinc-800 px-3 py-1.5 text-xs font-medium text-zinc-100 hover:bg-zinc-700"
        >
          Search
        </button>
      </div>
      {error ? (
        <p id="search-error" role="alert" className="font-mono text-xs whitespace-pre-wrap text-red-400">
          {error}
        </p>
      ) : null}
    </form>
  );
}
