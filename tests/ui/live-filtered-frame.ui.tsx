import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { act, cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { loadSuggestions } from "~/ui/filters/suggestions.ts";
import { APPLY_TIMEOUT_TEXT, FilteredLiveFrame, iframerSrc } from "~/ui/live/filtered-live-frame.tsx";

afterEach(cleanup);
const settings = (window as unknown as { happyDOM: { settings: Record<string, boolean> } }).happyDOM.settings;
const saved = { disable: settings.disableIframePageLoading, enable: settings.enableIframePageLoading };
beforeAll(() => {
  // about:blank frames get a window of their own, which plays the live frame here.
  settings.disableIframePageLoading = false;
  settings.enableIframePageLoading = true;
  localStorage.clear();
});
afterAll(() => {
  settings.disableIframePageLoading = saved.disable!;
  settings.enableIframePageLoading = saved.enable!;
});

const frameWindow = () => (document.querySelector("iframe") as HTMLIFrameElement).contentWindow;

function fromFrame(data: unknown, source: MessageEventSource | null = frameWindow(), origin = window.location.origin) {
  act(() => {
    window.dispatchEvent(new MessageEvent("message", { data, source, origin }));
  });
}

function commit(text: string) {
  const input = screen.getByRole("textbox", { name: "Filter" });
  fireEvent.change(input, { target: { value: text } });
  fireEvent.keyDown(input, { key: "Enter" });
}

describe("the page side of the frame conversation", () => {
  test("iframer URL: commit in the query, the socket URL encoded in the fragment", () => {
    expect(iframerSrc({ commitHash: "abc", socketUrl: "ws://h/api/LiveSubscribe?ticket=a&b", namespaceId: "ns-1", eventId: "e-1" })).toBe(
      "/iframer?commit=abc&namespace=ns-1&event=e-1#url=ws%3A%2F%2Fh%2Fapi%2FLiveSubscribe%3Fticket%3Da%26b",
    );
  });

  test("setFilters goes to the frame; markApplied from the frame applies and remembers it; strangers are ignored", async () => {
    render(<FilteredLiveFrame src="about:blank" suggestionsScope="ns-test" />);
    const posted: unknown[] = [];
    const target = frameWindow();
    if (!target) throw new Error("the frame has no window");
    target.postMessage = ((message: unknown) => posted.push(message)) as Window["postMessage"];
    commit("duration > 5ms");
    await waitFor(() => expect(posted).toContainEqual({ type: "setFilters", revision: 1, filters: ["duration > 5ms"] }));

    // Same data from another window or another origin changes nothing.
    fromFrame({ type: "markApplied", revision: 1 }, window);
    fromFrame({ type: "markApplied", revision: 1 }, frameWindow(), "https://evil.example");
    expect(document.querySelector("[data-pending]")).not.toBeNull();

    fromFrame({ type: "markApplied", revision: 1 });
    expect(document.querySelector("[data-pending]")).toBeNull();
    expect(loadSuggestions("ns-test").map((s) => s.text)).toEqual(["duration > 5ms"]);

    commit("response.status >>= 5");
    fromFrame({ type: "setFilterError", revision: 2, message: 'expected a status code, found ">="', position: 17, index: 1 });
    expect(screen.getByRole("alert").textContent).toBe('expected a status code, found ">=" (at character 18)');
    expect(screen.queryByText("response.status >>= 5", { selector: "button" })).toBeNull();
  });

  test("detailOpen from the frame makes it full-screen on a phone until the detail closes; strangers are ignored", () => {
    render(<FilteredLiveFrame src="about:blank" suggestionsScope="ns-sheet" />);
    const frame = () => document.querySelector("iframe") as HTMLIFrameElement;
    expect(frame().className).not.toContain("max-sm:fixed");
    fromFrame({ type: "detailOpen", isOpen: true }, window);
    expect(frame().className).not.toContain("max-sm:fixed");
    fromFrame({ type: "detailOpen", isOpen: true });
    expect(frame().className).toContain("max-sm:fixed max-sm:inset-0");
    fromFrame({ type: "detailOpen", isOpen: false });
    expect(frame().className).not.toContain("max-sm:fixed");
  });

  test("a frame that never answers: the change is rolled back with an error", async () => {
    render(<FilteredLiveFrame src="about:blank" suggestionsScope="ns-test-2" applyTimeoutMs={300} />);
    commit("duration > 9ms");
    expect(document.querySelector("[data-pending]")).not.toBeNull();
    await waitFor(() => expect(screen.getByRole("alert").textContent).toBe(APPLY_TIMEOUT_TEXT), { timeout: 2000 });
    expect(document.querySelector("[data-pending]")).toBeNull();
    expect((screen.getByRole("textbox", { name: "Filter" }) as HTMLInputElement).value).toBe("duration > 9ms");
  });
});
