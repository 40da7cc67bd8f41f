import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { useReducer, useState } from "react";
import { parseFilter } from "~/lib/filter/parse.ts";
import { type ChipState, chipReducer, commitBlocker, initialChipState } from "~/ui/filters/chip-state.ts";
import { FilterInput } from "~/ui/filters/filter-input.tsx";
import {
  builtInSuggestions,
  type FilterSuggestion,
  kindsOf,
  loadSuggestions,
  MAX_KEPT,
  MAX_SHOWN,
  pickSuggestions,
  recordUse,
  suggestionsKey,
} from "~/ui/filters/suggestions.ts";

afterEach(cleanup);
beforeEach(() => localStorage.clear());

const run = (state: ChipState, ...actions: Parameters<typeof chipReducer>[1][]) => actions.reduce(chipReducer, state);

describe("chip state machine", () => {
  test("Enter commits a filter that stays pending until markApplied", () => {
    let s = run(initialChipState(), { type: "draft", text: "  response.status >= 500 " }, { type: "commit" });
    expect(s.chips).toEqual(["response.status >= 500"]);
    expect(s.draft).toBe("");
    expect(s.isApplying).toBe(true);
    expect(s.revision).toBe(1);
    expect(s.applied).toEqual([]);
    s = run(s, { type: "markApplied", revision: 1 });
    expect(s.isApplying).toBe(false);
    expect(s.applied).toEqual(["response.status >= 500"]);
  });

  test("cannot commit empty, duplicate (case-insensitive) or while applying", () => {
    const base = initialChipState(['request.method == "POST"']);
    expect(commitBlocker(run(base, { type: "draft", text: "   " }))).toBe("empty");
    const dup = run(base, { type: "draft", text: 'REQUEST.METHOD == "post"' });
    expect(commitBlocker(dup)).toBe("duplicate");
    expect(run(dup, { type: "commit" })).toEqual(dup);
    const applying = run(base, { type: "draft", text: "duration > 5ms" }, { type: "commit" }, { type: "draft", text: "duration > 9ms" });
    expect(commitBlocker(applying)).toBe("applying");
    expect(run(applying, { type: "commit" }).chips).toEqual(['request.method == "POST"', "duration > 5ms"]);
  });

  test("an error rolls the change back, returns its text to the input and shows the message", () => {
    let s = run(initialChipState(["duration > 1ms"]), { type: "draft", text: "response.status >>= 5" }, { type: "commit" });
    s = run(s, { type: "filterError", revision: s.revision, message: "unexpected '>' at 17" });
    expect(s.chips).toEqual(["duration > 1ms"]);
    expect(s.draft).toBe("response.status >>= 5");
    expect(s.error).toBe("unexpected '>' at 17");
    expect(s.isApplying).toBe(false);
    // the next commit clears the error
    s = run(s, { type: "draft", text: "response.status >= 5" }, { type: "commit" });
    expect(s.error).toBeNull();
  });

  test("answers for an older revision are ignored", () => {
    let s = run(initialChipState(), { type: "draft", text: "duration > 1ms" }, { type: "commit" });
    s = run(s, { type: "markApplied", revision: 0 });
    expect(s.isApplying).toBe(true);
  });

  test("editing a chip: Enter commits the edit, Escape discards it, a duplicate edit is dropped", () => {
    const base = initialChipState(["duration > 1ms", "response.status == 200"]);
    const edited = run(base, { type: "startEdit", index: 0 }, { type: "editText", text: "duration > 2ms" }, { type: "commitEdit" });
    expect(edited.chips).toEqual(["duration > 2ms", "response.status == 200"]);
    expect(edited.isApplying).toBe(true);
    const escaped = run(base, { type: "startEdit", index: 0 }, { type: "editText", text: "zzz" }, { type: "cancelEdit" });
    expect(escaped.chips).toEqual(base.chips);
    expect(escaped.isApplying).toBe(false);
    const dup = run(base, { type: "startEdit", index: 0 }, { type: "editText", text: "RESPONSE.STATUS == 200" }, { type: "commitEdit" });
    expect(dup.chips).toEqual(base.chips);
    expect(dup.editing).toBeNull();
    expect(dup.isApplying).toBe(false);
  });

  test("removing a chip sends the smaller set", () => {
    const s = run(initialChipState(["a == 1", "b == 2"]), { type: "remove", index: 0 });
    expect(s.chips).toEqual(["b == 2"]);
    expect(s.isApplying).toBe(true);
  });
});

describe("saved suggestions", () => {
  test("kinds come from the fields a filter mentions", () => {
    expect(kindsOf('request.method == "GET" && duration > 5ms')).toEqual(["method", "duration"]);
    expect(kindsOf('request.url contains "/a" || response.status == 500')).toEqual(["status", "url"]);
  });

  test("uses are counted per namespace and stored with all fields", () => {
    recordUse("ns-1", "duration > 5ms", 1000);
    recordUse("ns-1", "DURATION > 5ms", 2000);
    recordUse("ns-2", "response.status == 404", 3000);
    const ns1 = loadSuggestions("ns-1");
    expect(ns1).toEqual([{ text: "DURATION > 5ms", kinds: ["duration"], useCount: 2, lastUsed: 2000, builtIn: false }]);
    expect(loadSuggestions("ns-2").map((s) => s.text)).toEqual(["response.status == 404"]);
    expect(JSON.parse(localStorage.getItem(suggestionsKey("ns-1"))!)).toEqual(ns1);
  });

  test("only the 100 most recently used are kept", () => {
    for (let i = 0; i < 130; i++) recordUse("ns", `duration > ${i}ms`, 10_000 + i);
    const kept = loadSuggestions("ns");
    expect(kept.length).toBe(MAX_KEPT);
    expect(kept[0]!.text).toBe("duration > 129ms");
    expect(kept.some((s) => s.text === "duration > 29ms")).toBe(false);
    expect(kept.some((s) => s.text === "duration > 30ms")).toBe(true);
  });

  test("at most 7 are shown; used ones first, then built-ins; current chips are left out", () => {
    const stored: FilterSuggestion[] = [
      { text: "duration > 5ms", kinds: ["duration"], useCount: 1, lastUsed: 5, builtIn: false },
      { text: 'request.url contains "/orders"', kinds: ["url"], useCount: 9, lastUsed: 1, builtIn: false },
    ];
    const shown = pickSuggestions(stored, "", []);
    expect(shown.length).toBe(MAX_SHOWN);
    expect(shown[0]!.text).toBe('request.url contains "/orders"');
    expect(shown[1]!.text).toBe("duration > 5ms");
    expect(shown[2]!.builtIn).toBe(true);
    expect(pickSuggestions(stored, "ORDERS", []).map((s) => s.text)).toEqual(['request.url contains "/orders"']);
    expect(pickSuggestions(stored, "", ["DURATION > 5ms"]).some((s) => s.text === "duration > 5ms")).toBe(false);
    expect(builtInSuggestions.length).toBeGreaterThan(MAX_SHOWN);
  });

  test("malformed storage is ignored", () => {
    localStorage.setItem(suggestionsKey("ns"), '[{"text":1},{"text":"ok == 1","kinds":[],"useCount":1,"lastUsed":1,"builtIn":false}]');
    expect(loadSuggestions("ns").map((s) => s.text)).toEqual(["ok == 1"]);
    localStorage.setItem(suggestionsKey("ns"), "{not json");
    expect(loadSuggestions("ns")).toEqual([]);
  });
});

function Harness({ onState }: { onState: (s: ChipState) => void }) {
  const [state, dispatch] = useReducer(chipReducer, initialChipState());
  const [suggestions] = useState<FilterSuggestion[]>([]);
  onState(state);
  return (
    <>
      <FilterInput state={state} dispatch={dispatch} suggestions={suggestions} />
      <button type="button" onClick={() => dispatch({ type: "markApplied", revision: state.revision })}>
        apply
      </button>
      <button type="button" onClick={() => dispatch({ type: "filterError", revision: state.revision, message: "bad filter at 3" })}>
        fail
      </button>
    </>
  );
}

describe("FilterInput", () => {
  test("typing + Enter adds a pending chip; the add button is disabled while applying", () => {
    let state = initialChipState();
    render(<Harness onState={(s) => (state = s)} />);
    const input = screen.getByRole("textbox", { name: "Filter" });
    fireEvent.change(input, { target: { value: "duration > 5ms" } });
    fireEvent.keyDown(input, { key: "Enter" });
    expect(state.chips).toEqual(["duration > 5ms"]);
    const chip = screen.getByRole("button", { name: "duration > 5ms" });
    expect(chip.closest("[data-pending]")).not.toBeNull();
    expect((screen.getByRole("button", { name: "Add filter" }) as HTMLButtonElement).disabled).toBe(true);
    fireEvent.click(screen.getByRole("button", { name: "apply" }));
    expect(screen.getByRole("button", { name: "duration > 5ms" }).closest("[data-pending]")).toBeNull();
  });

  test("an error shows under the input and the add button shows the alert icon", () => {
    render(<Harness onState={() => {}} />);
    const input = screen.getByRole("textbox", { name: "Filter" });
    fireEvent.change(input, { target: { value: "duration >> 5" } });
    fireEvent.keyDown(input, { key: "Enter" });
    fireEvent.click(screen.getByRole("button", { name: "fail" }));
    expect(screen.getByRole("alert").textContent).toBe("bad filter at 3");
    const add = screen.getByRole("button", { name: "Add filter (the last filter has an error)" });
    expect(add.querySelector('[data-icon="alert"]')).not.toBeNull();
    expect((screen.getByRole("textbox", { name: "Filter" }) as HTMLInputElement).value).toBe("duration >> 5");
  });

  test("clicking a chip edits it: Escape discards, Enter commits", () => {
    let state = initialChipState();
    render(<Harness onState={(s) => (state = s)} />);
    const input = screen.getByRole("textbox", { name: "Filter" });
    fireEvent.change(input, { target: { value: "duration > 5ms" } });
    fireEvent.keyDown(input, { key: "Enter" });
    fireEvent.click(screen.getByRole("button", { name: "apply" }));
    fireEvent.click(screen.getByRole("button", { name: "duration > 5ms" }));
    let edit = screen.getByRole("textbox", { name: "Edit filter duration > 5ms" });
    fireEvent.change(edit, { target: { value: "duration > 7ms" } });
    fireEvent.keyDown(edit, { key: "Escape" });
    expect(state.chips).toEqual(["duration > 5ms"]);
    fireEvent.click(screen.getByRole("button", { name: "duration > 5ms" }));
    edit = screen.getByRole("textbox", { name: "Edit filter duration > 5ms" });
    fireEvent.change(edit, { target: { value: "duration > 7ms" } });
    fireEvent.keyDown(edit, { key: "Enter" });
    expect(state.chips).toEqual(["duration > 7ms"]);
  });

  test("focusing shows at most 7 suggestions; clicking one commits it", async () => {
    let state = initialChipState();
    render(<Harness onState={(s) => (state = s)} />);
    const input = screen.getByRole("textbox", { name: "Filter" });
    fireEvent.focus(input);
    const list = screen.getByRole("list", { name: "Suggestions" });
    expect(list.querySelectorAll("li").length).toBe(MAX_SHOWN);
    await act(async () => {
      fireEvent.click(screen.getByRole("button", { name: /response\.status >= 500/ }));
    });
    expect(state.chips).toEqual(["response.status >= 500"]);
  });

  test("typing 'tls' offers the built-in filter for connections that were not decrypted", () => {
    render(<Harness onState={() => {}} />);
    const input = screen.getByRole("textbox", { name: "Filter" });
    fireEvent.focus(input);
    fireEvent.change(input, { target: { value: "tls" } });
    const list = screen.getByRole("list", { name: "Suggestions" });
    expect(list.textContent).toContain('tls == "not decrypted"');
  });

  test("suggestions close after a commit (Enter, a click, the add button) and open again when typing", async () => {
    render(<Harness onState={() => {}} />);
    const input = screen.getByRole("textbox", { name: "Filter" });
    fireEvent.focus(input);
    fireEvent.change(input, { target: { value: "duration > 5ms" } });
    fireEvent.keyDown(input, { key: "Enter" });
    expect(screen.queryByRole("list", { name: "Suggestions" })).toBeNull();
    fireEvent.click(screen.getByRole("button", { name: "apply" }));
    fireEvent.change(input, { target: { value: "response" } });
    expect(screen.getByRole("list", { name: "Suggestions" })).not.toBeNull();
    await act(async () => {
      fireEvent.click(screen.getByRole("button", { name: /response\.status >= 500/ }));
    });
    expect(screen.queryByRole("list", { name: "Suggestions" })).toBeNull();
    fireEvent.click(screen.getByRole("button", { name: "apply" }));
    fireEvent.change(input, { target: { value: "request.method" } });
    fireEvent.keyDown(input, { key: "Escape" });
    expect(screen.queryByRole("list", { name: "Suggestions" })).toBeNull();
  });

  test("a filter error clears with its draft", () => {
    render(<Harness onState={() => {}} />);
    const input = screen.getByRole("textbox", { name: "Filter" });
    fireEvent.change(input, { target: { value: "duration >> 5" } });
    fireEvent.keyDown(input, { key: "Enter" });
    fireEvent.click(screen.getByRole("button", { name: "fail" }));
    expect(screen.getByRole("alert").textContent).toBe("bad filter at 3");
    // Still there while the text is being corrected...
    fireEvent.change(input, { target: { value: "duration >> " } });
    expect(screen.getByRole("alert").textContent).toBe("bad filter at 3");
    // ...and gone with the text.
    fireEvent.change(input, { target: { value: "" } });
    expect(screen.queryByRole("alert")).toBeNull();
    expect(screen.getByRole("button", { name: "Add filter" })).not.toBeNull();
  });

  test("the placeholder's example is one the filter language accepts", () => {
    render(<Harness onState={() => {}} />);
    const placeholder = screen.getByRole("textbox", { name: "Filter" }).getAttribute("placeholder") ?? "";
    expect(placeholder).toStartWith("Filter, e.g. ");
    expect(parseFilter(placeholder.slice("Filter, e.g. ".length)).ok).toBe(true);
  });
});
