import { afterEach, describe, expect, test } from "bun:test";
import { act, cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import type { Token } from "~/lib/protocol/api/tokens.ts";
import { ApiError } from "~/ui/lib/api.ts";
import { formatAge, isNewToken, maskToken } from "~/ui/lib/format.ts";
import { type TokenCalls, TokenRow, TokenSection } from "~/ui/pages/dashboard/token-section.tsx";

afterEach(cleanup);

const NOW = Date.parse("2026-05-01T12:00:00Z");
const ago = (ms: number) => new Date(NOW - ms).toISOString();

describe("token age", () => {
  test("uses the largest whole unit, singular and plural", () => {
    expect(formatAge(ago(0), NOW)).toBe("0 seconds ago");
    expect(formatAge(ago(1000), NOW)).toBe("1 second ago");
    expect(formatAge(ago(59_000), NOW)).toBe("59 seconds ago");
    expect(formatAge(ago(60_000), NOW)).toBe("1 minute ago");
    expect(formatAge(ago(3 * 3_600_000 + 120_000), NOW)).toBe("3 hours ago");
    expect(formatAge(ago(3_600_000), NOW)).toBe("1 hour ago");
    expect(formatAge(ago(86_400_000), NOW)).toBe("1 day ago");
    expect(formatAge(ago(40 * 86_400_000), NOW)).toBe("40 days ago");
    expect(formatAge(NOW - 5000, NOW)).toBe("5 seconds ago");
  });

  test("a clock slightly behind the server never shows a negative age", () => {
    expect(formatAge(new Date(NOW + 4000).toISOString(), NOW)).toBe("0 seconds ago");
  });

  test("NEW means younger than 30 seconds", () => {
    expect(isNewToken(ago(29_999), NOW)).toBe(true);
    expect(isNewToken(ago(30_000), NOW)).toBe(false);
  });

  test("rows show the masked token, creator, age and the NEW badge only while new", () => {
    const token: Token = {
      tokenId: "t1",
      name: "tsk_...Ab3xYz",
      createTime: ago(5000),
      creatorEmail: "ada@example.test",
      label: "",
      lastUsedTime: null,
    };
    const { rerender } = render(
      <ul>
        <TokenRow token={token} now={NOW} onDelete={() => {}} />
      </ul>,
    );
    expect(screen.queryByText("tsk_...Ab3xYz")).not.toBeNull();
    expect(screen.queryByText("ada@example.test")).not.toBeNull();
    expect(screen.queryByText("created 5 seconds ago · never used")).not.toBeNull();
    expect(screen.queryByText("NEW")).not.toBeNull();
    rerender(
      <ul>
        <TokenRow token={token} now={NOW + 60_000} onDelete={() => {}} />
      </ul>,
    );
    expect(screen.queryByText("NEW")).toBeNull();
    expect(screen.queryByText("created 1 minute ago · never used")).not.toBeNull();
  });

  test("a bare last part gets the fixed prefix", () => {
    expect(maskToken("Ab3xYz")).toBe("tsk_...Ab3xYz");
  });
});

function fakeCalls(initial: Token[]) {
  const state = {
    tokens: [...initial],
    generated: 0,
    removed: [] as string[],
    renamed: [] as Array<[string, string]>,
    failWith: null as ApiError | null,
  };
  const calls: TokenCalls = {
    list: async () => [...state.tokens],
    generate: async () => {
      if (state.failWith) throw state.failWith;
      state.generated++;
      const token = `tsk_${"x".repeat(37)}NEW${state.generated}xx`;
      state.tokens.push({
        tokenId: `g${state.generated}`,
        name: `tsk_...${token.slice(-6)}`,
        createTime: new Date().toISOString(),
        creatorEmail: "me@example.test",
        label: "",
        lastUsedTime: null,
      });
      return { token, tokenId: `g${state.generated}` };
    },
    rename: async (tokenId, label) => {
      if (state.failWith) throw state.failWith;
      state.renamed.push([tokenId, label]);
      state.tokens = state.tokens.map((t) => (t.tokenId === tokenId ? { ...t, label: label.trim() } : t));
    },
    remove: async (tokenId) => {
      if (state.failWith) throw state.failWith;
      state.removed.push(tokenId);
      state.tokens = state.tokens.filter((t) => t.tokenId !== tokenId);
    },
  };
  return { state, calls };
}

const forbidden = new ApiError("got unexpected status code 403: forbidden", 403, "trace", "forbidden");

describe("token section", () => {
  test("create shows the token once with a warning; copy confirms for 3 seconds", async () => {
    const { calls } = fakeCalls([]);
    const copied: string[] = [];
    Object.defineProperty(navigator, "clipboard", {
      value: { writeText: async (text: string) => void copied.push(text) },
      configurable: true,
    });
    render(<TokenSection title="Namespace tokens" scope="namespace" calls={calls} />);
    await screen.findByText(/No tokens yet/);
    await act(async () => fireEvent.click(screen.getByRole("button", { name: "Create" })));
    const dialog = await screen.findByRole("dialog", { name: "New token" });
    expect(dialog.textContent).toContain("cannot be viewed again");
    const token = screen.getByTestId("new-token").textContent!;
    expect(token.startsWith("tsk_")).toBe(true);
    await act(async () => fireEvent.click(screen.getByRole("button", { name: "Copy token" })));
    expect(copied).toEqual([token]);
    expect(screen.queryByText("Copied!")).not.toBeNull();
    await act(async () => {
      await new Promise((resolve) => setTimeout(resolve, 2500));
    });
    expect(screen.queryByText("Copied!")).not.toBeNull();
    await act(async () => {
      await new Promise((resolve) => setTimeout(resolve, 700));
    });
    expect(screen.queryByText("Copied!")).toBeNull();
    expect(screen.queryByText("Copy")).not.toBeNull();
    // The list under the dialog already has the new row, masked, with the NEW badge.
    expect(screen.queryByText(`tsk_...${token.slice(-6)}`)).not.toBeNull();
    expect(screen.queryByText("NEW")).not.toBeNull();
    fireEvent.click(screen.getByRole("button", { name: "Done" }));
    expect(screen.queryByRole("dialog")).toBeNull();
    expect(screen.queryByText(token)).toBeNull();
  });

  test("delete asks for confirmation with the token name; Cancel keeps it, Delete removes it", async () => {
    const { calls, state } = fakeCalls([
      { tokenId: "t1", name: "tsk_...Ab3xYz", createTime: ago(3_600_000), creatorEmail: "a@b.test", label: "", lastUsedTime: null },
    ]);
    render(<TokenSection title="Namespace tokens" scope="namespace" calls={calls} />);
    await screen.findByText("tsk_...Ab3xYz");
    fireEvent.click(screen.getByRole("button", { name: "Delete token tsk_...Ab3xYz" }));
    const dialog = screen.getByRole("dialog");
    expect(dialog.textContent).toContain("Are you sure you want to delete token tsk_...Ab3xYz? This action cannot be undone.");
    fireEvent.click(screen.getByRole("button", { name: "Cancel" }));
    expect(state.removed).toEqual([]);
    fireEvent.click(screen.getByRole("button", { name: "Delete token tsk_...Ab3xYz" }));
    await act(async () => fireEvent.click(screen.getByRole("button", { name: "Delete" })));
    expect(state.removed).toEqual(["t1"]);
    await screen.findByText(/No tokens yet/);
  });

  test("403 on generate and delete shows the spec's modal texts per scope", async () => {
    const { calls, state } = fakeCalls([
      { tokenId: "o1", name: "tso_...QQQQQQ", createTime: ago(1000), creatorEmail: null, label: "", lastUsedTime: null },
    ]);
    state.failWith = forbidden;
    render(<TokenSection title="Organization worker tokens" scope="org" calls={calls} />);
    await screen.findByText("tso_...QQQQQQ");
    await act(async () => fireEvent.click(screen.getByRole("button", { name: "Create" })));
    expect((await screen.findByRole("dialog")).textContent).toContain("You do not have permissions to generate a token in this org.");
    fireEvent.click(screen.getByRole("button", { name: "OK" }));
    fireEvent.click(screen.getByRole("button", { name: "Delete token tso_...QQQQQQ" }));
    await act(async () => fireEvent.click(screen.getByRole("button", { name: "Delete" })));
    expect((await screen.findByRole("dialog")).textContent).toContain("You do not have permissions to delete a token in this org.");
  });

  test("a token is named in the new-token dialog, and renamed in its row (Enter saves, Escape keeps the old name)", async () => {
    const { calls, state } = fakeCalls([]);
    render(<TokenSection title="Namespace tokens" scope="namespace" calls={calls} />);
    await screen.findByText(/No tokens yet/);
    await act(async () => fireEvent.click(screen.getByRole("button", { name: "Create" })));
    const dialog = await screen.findByRole("dialog", { name: "New token" });
    fireEvent.change(within(dialog).getByRole("textbox", { name: /^Name/ }), { target: { value: "staging api" } });
    await act(async () => fireEvent.click(screen.getByRole("button", { name: "Done" })));
    expect(state.renamed).toEqual([["g1", "staging api"]]);
    const masked = state.tokens[0]!.name;
    await act(async () => fireEvent.click(await screen.findByRole("button", { name: `Rename token ${masked}` })));
    const input = screen.getByRole("textbox", { name: `Name of token ${masked}` });
    expect((input as HTMLInputElement).value).toBe("staging api");
    fireEvent.change(input, { target: { value: "discarded" } });
    fireEvent.keyDown(input, { key: "Escape" });
    expect(screen.getByRole("button", { name: `Rename token ${masked}` }).textContent).toBe("staging api");
    fireEvent.click(screen.getByRole("button", { name: `Rename token ${masked}` }));
    fireEvent.change(screen.getByRole("textbox", { name: `Name of token ${masked}` }), { target: { value: "prod api" } });
    await act(async () => fireEvent.submit(screen.getByRole("textbox", { name: `Name of token ${masked}` }).closest("form")!));
    expect(state.renamed.at(-1)).toEqual(["g1", "prod api"]);
    expect((await screen.findByRole("button", { name: `Rename token ${masked}` })).textContent).toBe("prod api");
  });

  test("a member's rename gets the permission modal and keeps the name", async () => {
    const { calls, state } = fakeCalls([
      { tokenId: "t1", name: "tsk_...Ab3xYz", createTime: ago(1000), creatorEmail: "a@b.test", label: "ci", lastUsedTime: ago(120_000) },
    ]);
    state.failWith = forbidden;
    render(<TokenSection title="Namespace tokens" scope="namespace" calls={calls} now={NOW} />);
    expect((await screen.findByText(/last used/)).textContent).toMatch(/last used 2 minutes ago/);
    fireEvent.click(screen.getByRole("button", { name: "Rename token tsk_...Ab3xYz" }));
    fireEvent.change(screen.getByRole("textbox", { name: "Name of token tsk_...Ab3xYz" }), { target: { value: "mine" } });
    await act(async () => fireEvent.submit(screen.getByRole("textbox", { name: "Name of token tsk_...Ab3xYz" }).closest("form")!));
    expect((await screen.findByRole("dialog")).textContent).toContain("You do not have permissions to rename a token in this namespace.");
    expect(state.tokens[0]!.label).toBe("ci");
  });
});
