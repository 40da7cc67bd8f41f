/**
 * The filter chips of the Live screen as a pure state machine.
 * A committed change is sent to the live frame and stays pending until the frame answers
 * markApplied (all chips applied) or setFilterError (the change is rolled back, its text returns to the
 * input, and the error shows under it until that text is committed again or cleared).
 */
export type ChipState = {
  /** The chips as shown, in order. */
  chips: string[];
  /** The chips the frame last confirmed; the rollback point of an error. */
  applied: string[];
  draft: string;
  editing: { index: number; text: string } | null;
  /** A change was sent and not yet confirmed: nothing else can be committed. */
  isApplying: boolean;
  /** The revision of the last change sent to the frame; answers for older revisions are ignored. */
  revision: number;
  /** The text that was committed in the pending change, given back to the input on an error. */
  pendingText: string | null;
  error: string | null;
};

export type ChipAction =
  | { type: "draft"; text: string }
  | { type: "commit" }
  | { type: "remove"; index: number }
  | { type: "startEdit"; index: number }
  | { type: "editText"; text: string }
  | { type: "commitEdit" }
  | { type: "cancelEdit" }
  | { type: "markApplied"; revision: number }
  | { type: "filterError"; revision: number; message: string };

export const initialChipState = (chips: string[] = []): ChipState => ({
  chips,
  applied: chips,
  draft: "",
  editing: null,
  isApplying: false,
  revision: 0,
  pendingText: null,
  error: null,
});

const same = (a: string, b: string) => a.trim().toLowerCase() === b.trim().toLowerCase();

export function isDuplicate(chips: string[], text: string, exceptIndex = -1): boolean {
  return chips.some((chip, i) => i !== exceptIndex && same(chip, text));
}

/** Why the input cannot be committed right now, or null when it can. */
export function commitBlocker(state: ChipState, text = state.draft): "empty" | "duplicate" | "applying" | null {
  if (state.isApplying) return "applying";
  if (text.trim() === "") return "empty";
  if (isDuplicate(state.chips, text)) return "duplicate";
  return null;
}

function send(state: ChipState, chips: string[], pendingText: string | null): ChipState {
  return { ...state, chips, isApplying: true, revision: state.revision + 1, pendingText, error: null };
}

export function chipReducer(state: ChipState, action: ChipAction): ChipState {
  switch (action.type) {
    case "draft":
      // The error belongs to the text it came back with: emptying that text clears it.
      return { ...state, draft: action.text, error: action.text.trim() === "" ? null : state.error };
    case "commit": {
      if (commitBlocker(state) !== null) return state;
      const text = state.draft.trim();
      return { ...send(state, [...state.chips, text], text), draft: "" };
    }
    case "remove": {
      if (state.isApplying || action.index < 0 || action.index >= state.chips.length) return state;
      const chips = state.chips.filter((_, i) => i !== action.index);
      return { ...send(state, chips, null), editing: null };
    }
    case "startEdit": {
      if (state.isApplying) return state;
      const text = state.chips[action.index];
      if (text === undefined) return state;
      return { ...state, editing: { index: action.index, text } };
    }
    case "editText":
      return state.editing ? { ...state, editing: { ...state.editing, text: action.text } } : state;
    case "cancelEdit":
      return { ...state, editing: null };
    case "commitEdit": {
      const editing = state.editing;
      if (!editing || state.isApplying) return state;
      const text = editing.text.trim();
      // An unchanged edit, or one that would duplicate another chip, is simply closed.
      if (text === state.chips[editing.index] || isDuplicate(state.chips, text, editing.index)) {
        return { ...state, editing: null };
      }
      if (text === "")
        return {
          ...send(
            state,
            state.chips.filter((_, i) => i !== editing.index),
            null,
          ),
          editing: null,
        };
      const chips = state.chips.map((chip, i) => (i === editing.index ? text : chip));
      return { ...send(state, chips, text), editing: null };
    }
    case "markApplied":
      if (action.revision !== state.revision) return state;
      return { ...state, applied: state.chips, isApplying: false, pendingText: null, error: null };
    case "filterError": {
      if (action.revision !== state.revision) return state;
      const draft = state.pendingText ?? state.draft;
      return { ...state, chips: state.applied, isApplying: false, pendingText: null, error: action.message, draft };
    }
  }
}
