import { useEffect, useReducer, useRef, useState } from "react";
import type { KnownValues } from "~/lib/filter/complete.ts";
import { parseFilterChips } from "~/lib/filter/parse.ts";
import { chipReducer, initialChipState } from "~/ui/filters/chip-state.ts";
import { FilterInput } from "~/ui/filters/filter-input.tsx";
import { type FilterSuggestion, forgetSuggestion, loadSuggestions, recordUse } from "~/ui/filters/suggestions.ts";
import { filterErrorText } from "~/ui/live/frame-messages.ts";

/**
 * The filter input (as on the Live screen), applied here by parsing locally (the worker parses again):
 * a committed change is confirmed (markApplied) when every chip parses, else rolled back with the error.
 * Remount it (key) when the chips in the URL change.
 */
export function ExplorerFilterBar({
  chips,
  namespaceId,
  known,
  onChips,
}: {
  chips: string[];
  namespaceId: string;
  known?: KnownValues;
  onChips: (chips: string[]) => void;
}) {
  const [state, dispatch] = useReducer(chipReducer, chips, initialChipState);
  const [suggestions, setSuggestions] = useState<FilterSuggestion[]>([]);
  const onChipsRef = useRef(onChips);
  onChipsRef.current = onChips;
  useEffect(() => setSuggestions(loadSuggestions(namespaceId)), [namespaceId]);

  useEffect(() => {
    if (!state.isApplying) return;
    const parsed = parseFilterChips(state.chips);
    if (!parsed.ok) {
      dispatch({
        type: "filterError",
        revision: state.revision,
        message: filterErrorText(parsed.error.message, parsed.error.position),
      });
      return;
    }
    if (state.pendingText) setSuggestions(recordUse(namespaceId, state.pendingText));
    dispatch({ type: "markApplied", revision: state.revision });
    onChipsRef.current(state.chips);
  }, [state.isApplying, state.revision, state.chips, state.pendingText, namespaceId]);

  return (
    <FilterInput
      state={state}
      dispatch={dispatch}
      suggestions={suggestions}
      known={known}
      onForget={(text) => setSuggestions(forgetSuggestion(namespaceId, text))}
    />
  );
}
