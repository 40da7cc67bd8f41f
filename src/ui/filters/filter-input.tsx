import { type Dispatch, useMemo, useRef, useState } from "react";
import { completeFilter, type KnownValues } from "~/lib/filter/complete.ts";
import { placeholderExample } from "~/lib/filter/examples.ts";
import { type ChipAction, type ChipState, commitBlocker } from "./chip-state.ts";
import { AlertIcon, CloseIcon, PlusIcon } from "./icons.tsx";
import { type FilterSuggestion, pickSuggestions } from "./suggestions.ts";

const blockerText = {
  empty: "Type a filter first",
  duplicate: "This filter is already applied",
  applying: "Applying the previous filter…",
} as const;

/**
 * The filter input of the Live and Requests screens: chips for committed filters, a text input (Enter commits),
 * autocomplete of fields, operators and values (arrow keys pick one, Tab or Enter takes it), saved suggestions,
 * and the error of the last change under it. State lives in the caller (chipReducer) so the caller can talk to the
 * live frame or the URL.
 */
export function FilterInput({
  state,
  dispatch,
  suggestions,
  onForget,
  known,
}: {
  state: ChipState;
  dispatch: Dispatch<ChipAction>;
  suggestions: FilterSuggestion[];
  onForget?: (text: string) => void;
  /** Values seen in the events on screen, offered as completions (services, hosts). */
  known?: KnownValues;
}) {
  // Suggestions open when the input gets focus or the text changes, and close once a filter is committed.
  const [isSuggesting, setSuggesting] = useState(false);
  const [isFocused, setFocused] = useState(false);
  const [active, setActive] = useState(-1);
  const input = useRef<HTMLInputElement>(null);
  const blocker = commitBlocker(state);
  const completions = useMemo(
    () => (isFocused && state.draft.trim() !== "" ? completeFilter(state.draft, known) : []),
    [isFocused, state.draft, known],
  );
  const shown = useMemo(
    () => (isSuggesting ? pickSuggestions(suggestions, state.draft, state.chips).slice(0, completions.length > 0 ? 3 : undefined) : []),
    [isSuggesting, completions.length, suggestions, state.draft, state.chips],
  );
  const commit = () => {
    setSuggesting(false);
    dispatch({ type: "commit" });
  };
  const hasError = state.error !== null;
  const take = (text: string) => {
    dispatch({ type: "draft", text });
    setActive(-1);
    input.current?.focus();
  };

  return (
    <div className="relative w-full">
      <div
        className={`flex min-h-10 flex-wrap items-center gap-1.5 rounded-lg border bg-zinc-900 px-2 py-1.5 ${hasError ? "border-red-500/70" : "border-zinc-700 focus-within:border-zinc-500"}`}
      >
        {state.chips.map((chip, index) =>
          state.editing?.index === index ? (
            <input
              key={`edit-${chip}`}
              aria-label={`Edit filter ${chip}`}
              className="min-w-48 rounded-md border border-zinc-500 bg-zinc-950 px-2 py-0.5 font-mono text-xs text-zinc-100 outline-none"
              value={state.editing.text}
              // biome-ignore lint/a11y/noAutofocus: the user just asked to edit this chip
              autoFocus
              onChange={(e) => dispatch({ type: "editText", text: e.target.value })}
              onKeyDown={(e) => {
                if (e.key === "Enter") {
                  e.preventDefault();
                  dispatch({ type: "commitEdit" });
                } else if (e.key === "Escape") {
                  e.preventDefault();
                  dispatch({ type: "cancelEdit" });
                }
              }}
              onBlur={() => dispatch({ type: "cancelEdit" })}
            />
          ) : (
            <Chip
              key={chip}
              text={chip}
              isPending={state.isApplying && !state.applied.includes(chip)}
              isLocked={state.isApplying}
              onEdit={() => dispatch({ type: "startEdit", index })}
              onRemove={() => dispatch({ type: "remove", index })}
            />
          ),
        )}
        <input
          ref={input}
          aria-label="Filter"
          aria-invalid={hasError}
          aria-autocomplete="list"
          aria-controls={completions.length > 0 ? "filter-completions" : undefined}
          aria-describedby={hasError ? "filter-error" : undefined}
          className="min-w-64 flex-1 bg-transparent px-1 py-0.5 font-mono text-sm text-zinc-100 placeholder:text-zinc-500 outline-none"
          placeholder={`Filter, e.g. ${placeholderExample}`}
          value={state.draft}
          spellCheck={false}
          autoComplete="off"
          onFocus={() => {
            setFocused(true);
            setSuggesting(true);
          }}
          onBlur={() =>
            setTimeout(() => {
              setFocused(false);
              setSuggesting(false);
            }, 150)
          }
          onChange={(e) => {
            setSuggesting(true);
            setActive(-1);
            dispatch({ type: "draft", text: e.target.value });
          }}
          onKeyDown={(e) => {
            const picked = completions[active];
            if (e.key === "ArrowDown" && completions.length > 0) {
              e.preventDefault();
              setActive((active + 1) % completions.length);
            } else if (e.key === "ArrowUp" && completions.length > 0) {
              e.preventDefault();
              setActive(active <= 0 ? completions.length - 1 : active - 1);
            } else if (e.key === "Escape" && active >= 0) {
              e.preventDefault();
              setActive(-1);
            } else if ((e.key === "Tab" && !e.shiftKey && completions.length > 0) || (e.key === "Enter" && picked)) {
              e.preventDefault();
              take((picked ?? completions[0])?.text ?? state.draft);
            } else if (e.key === "Enter") {
              e.preventDefault();
              commit();
            } else if (e.key === "Escape") {
              setSuggesting(false);
            }
          }}
        />
        <button
          type="button"
          aria-label={hasError ? "Add filter (the last filter has an error)" : "Add filter"}
          title={blocker ? blockerText[blocker] : "Add filter"}
          disabled={blocker !== null}
          onClick={commit}
          className={`flex size-7 items-center justify-center rounded-md disabled:cursor-not-allowed disabled:opacity-50 ${hasError ? "text-red-400 hover:bg-red-500/10" : "text-zinc-300 hover:bg-zinc-800"}`}
        >
          {hasError ? <AlertIcon /> : <PlusIcon />}
        </button>
      </div>
      {hasError ? (
        <p id="filter-error" role="alert" className="mt-1 font-mono text-xs whitespace-pre-wrap text-red-400">
          {state.error}
        </p>
      ) : null}
      {completions.length > 0 || shown.length > 0 ? (
        <div className="absolute z-20 mt-1 w-full overflow-hidden rounded-lg border border-zinc-700 bg-zinc-900 py-1 shadow-xl">
          {completions.length > 0 ? (
            <ul id="filter-completions" aria-label="Completions" className={shown.length > 0 ? "border-b border-zinc-800 pb-1" : ""}>
              {completions.map((c, i) => (
                <li key={c.text}>
                  <button
                    type="button"
                    id={`filter-completion-${i}`}
                    aria-current={i === active || undefined}
                    className={`flex w-full items-baseline justify-between gap-3 px-3 py-1.5 text-left font-mono text-xs text-zinc-200 ${i === active ? "bg-zinc-800" : "hover:bg-zinc-800"}`}
                    onMouseDown={(e) => e.preventDefault()}
                    onClick={() => take(c.text)}
                  >
                    <span className="shrink-0">{c.label}</span>
                    <span className="truncate font-sans text-[11px] text-zinc-500">{c.detail}</span>
                  </button>
                </li>
              ))}
            </ul>
          ) : null}
          {shown.length > 0 ? (
            <ul aria-label="Suggestions">
              {shown.map((s) => (
                <li key={s.text} className="group flex items-center">
                  <button
                    type="button"
                    className="flex flex-1 items-center justify-between px-3 py-1.5 text-left font-mono text-xs text-zinc-200 hover:bg-zinc-800"
                    onMouseDown={(e) => e.preventDefault()}
                    onClick={() => {
                      dispatch({ type: "draft", text: s.text });
                      commit();
                    }}
                  >
                    <span>{s.text}</span>
                    <span className="text-[10px] text-zinc-500">{s.builtIn ? "suggested" : `used ${s.useCount}×`}</span>
                  </button>
                  {!s.builtIn && onForget ? (
                    <button
                      type="button"
                      aria-label={`Forget ${s.text}`}
                      className="px-2 text-zinc-500 opacity-0 group-hover:opacity-100 hover:text-zinc-200"
                      onMouseDown={(e) => e.preventDefault()}
                      onClick={() => onForget(s.text)}
                    >
                      <CloseIcon />
                    </button>
                  ) : null}
                </li>
              ))}
            </ul>
          ) : null}
        </div>
      ) : null}
    </div>
  );
}

function Chip({
  text,
  isPending,
  isLocked,
  onEdit,
  onRemove,
}: {
  text: string;
  isPending: boolean;
  isLocked: boolean;
  onEdit: () => void;
  onRemove: () => void;
}) {
  return (
    <span
      data-pending={isPending || undefined}
      className={`inline-flex items-center rounded-md border font-mono text-xs ${isPending ? "border-amber-500/50 bg-amber-500/10 text-amber-200" : "border-zinc-700 bg-zinc-800 text-zinc-100"}`}
    >
      <button
        type="button"
        className="px-2 py-0.5 disabled:cursor-wait"
        title={isPending ? "Applying…" : "Click to edit"}
        disabled={isLocked}
        onClick={onEdit}
      >
        {text}
      </button>
      <button
        type="button"
        aria-label={`Remove filter ${text}`}
        className="px-1.5 py-1 text-zinc-400 hover:text-zinc-100 disabled:cursor-wait"
        disabled={isLocked}
        onClick={onRemove}
      >
        <CloseIcon />
      </button>
    </span>
  );
}
