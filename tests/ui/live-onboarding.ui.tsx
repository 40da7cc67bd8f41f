import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { OnboardingOverlay } from "~/ui/onboarding/onboarding-overlay.tsx";
import { runCommand, setupCommands } from "~/ui/onboarding/stacks.ts";

afterEach(cleanup);

let server: Server;
let origin = "";
let hasSeen = false;
let forbidToken = false;
const calls: Array<{ path: string; body: unknown; at: number }> = [];
/** The tokens of each namespace, as the server would list them. */
const tokens = new Map<string, Array<Record<string, unknown>>>();
let minted = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = "";
    req.on("data", (c) => (raw += c));
    req.on("end", () => {
      const body = raw ? JSON.parse(raw) : null;
      calls.push({ path: req.url ?? "", body, at: Date.now() });
      res.setHeader("content-type", "application/json");
      if (req.url === "/api/HasSeenPublisher") return res.end(JSON.stringify({ hasSeenPublisher: hasSeen }));
      if (req.url === "/api/GenerateNamespaceToken") {
        if (forbidToken) {
          res.statusCode = 403;
          return res.end(JSON.stringify({ error: "forbidden" }));
        }
        const token = minted === 0 ? "tsn_live_abc123" : `tsn_live_new${minted}`;
        const tokenId = `tok-${++minted}`;
        const list = tokens.get(body.namespaceId) ?? [];
        list.unshift({
          tokenId,
          name: `tsk_...${token.slice(-6)}`,
          createTime: new Date().toISOString(),
          creatorEmail: "me@example.test",
          label: body.label ?? "",
          lastUsedTime: null,
        });
        tokens.set(body.namespaceId, list);
        return res.end(JSON.stringify({ token, tokenId }));
      }
      if (req.url === "/api/ListNamespaceTokens") return res.end(JSON.stringify({ tokens: tokens.get(body.namespaceId) ?? [] }));
      if (req.url === "/api/DeleteNamespaceToken") {
        for (const [ns, list] of tokens)
          tokens.set(
            ns,
            list.filter((t) => t.tokenId !== body.tokenId),
          );
        return res.end("{}");
      }
      res.statusCode = 404;
      res.end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  (window as unknown as { happyDOM: { setURL: (u: string) => void } }).happyDOM.setURL(`${origin}/dashboard/acme/live`);
});
afterAll(() => server.close());

describe("setup commands", () => {
  test("install, token and run lines per stack", () => {
    expect(setupCommands(runCommand("python"), "https://tapscope.example.com/", "tok")).toEqual([
      "curl -fsSL https://tapscope.example.com/install.sh | sh",
      "export TAPSCOPE_TOKEN=tok",
      "tapscope run -- python3 main.py",
    ]);
    expect(setupCommands(runCommand("node"), "http://x", "t")[2]).toBe("tapscope run -- node server.js");
    expect(setupCommands(runCommand("next"), "http://x", "t")[2]).toBe("tapscope run -- npm run start");
    expect(setupCommands(runCommand("go"), "http://x", "t")[2]).toBe("tapscope run -- ./main");
    expect(setupCommands(runCommand("other"), "http://x", "t")[2]).toBe("tapscope run -- <your command>");
  });
});

describe("onboarding overlay", () => {
  test("two steps, a real token, polling every second until connected, then Finish", async () => {
    hasSeen = false;
    forbidToken = false;
    calls.length = 0;
    let closed = 0;
    render(<OnboardingOverlay orgId="org-1" namespaceId="ns-1" publicUrl={origin} onClose={() => closed++} />);
    expect(screen.queryByRole("heading", { name: "Connect your backend" })).not.toBeNull();
    for (const label of ["Python", "Node.js", "Next.js", "Go", "Other"])
      expect(screen.queryByRole("button", { name: label })).not.toBeNull();
    expect(screen.queryByRole("button", { name: "I'll do this later" })).not.toBeNull();

    fireEvent.click(screen.getByRole("button", { name: "Node.js" }));
    await waitFor(() => expect(screen.getByTestId("command-1").textContent).toBe("export TAPSCOPE_TOKEN=tsn_live_abc123"));
    expect(screen.getByTestId("command-0").textContent).toBe(`curl -fsSL ${origin}/install.sh | sh`);
    expect(screen.getByTestId("command-2").textContent).toBe("tapscope run -- node server.js");
    expect(calls.find((c) => c.path === "/api/GenerateNamespaceToken")?.body).toEqual({ namespaceId: "ns-1", label: "Onboarding" });

    // the stack can be changed on step 2; the token stays
    fireEvent.click(screen.getByRole("tab", { name: "Go" }));
    expect(screen.getByTestId("command-2").textContent).toBe("tapscope run -- ./main");
    expect(calls.filter((c) => c.path === "/api/GenerateNamespaceToken").length).toBe(1);

    expect(screen.getByRole("status").textContent).toBe("Waiting for connections…");
    const finish = screen.getByRole("button", { name: "Finish" }) as HTMLButtonElement;
    expect(finish.disabled).toBe(true);
    fireEvent.click(finish);
    expect(closed).toBe(0);

    await Bun.sleep(2200);
    const polls = calls.filter((c) => c.path === "/api/HasSeenPublisher");
    expect(polls.length).toBeGreaterThanOrEqual(2);
    expect(polls.length).toBeLessThanOrEqual(4);
    expect(polls[0]!.body).toEqual({ orgId: "org-1" });

    hasSeen = true;
    await waitFor(() => expect(screen.getByRole("status").textContent).toBe("Connected!"), { timeout: 2500 });
    expect((screen.getByRole("button", { name: "Finish" }) as HTMLButtonElement).disabled).toBe(false);
    expect(screen.queryByRole("button", { name: "I'll do this later" })).toBeNull();
    const pollsAtConnect = calls.filter((c) => c.path === "/api/HasSeenPublisher").length;
    await Bun.sleep(1500);
    expect(calls.filter((c) => c.path === "/api/HasSeenPublisher").length).toBe(pollsAtConnect);
    fireEvent.click(screen.getByRole("button", { name: "Finish" }));
    expect(closed).toBe(1);
  }, 15_000);

  test("I'll do this later closes it on either step; a 403 on the token is explained", async () => {
    hasSeen = false;
    forbidToken = true;
    let closed = 0;
    render(<OnboardingOverlay orgId="org-1" namespaceId="ns-forbidden" publicUrl={origin} onClose={() => closed++} />);
    fireEvent.click(screen.getByRole("button", { name: "I'll do this later" }));
    expect(closed).toBe(1);
    fireEvent.click(screen.getByRole("button", { name: "Python" }));
    await waitFor(() => expect(screen.queryByText("You do not have permissions to generate a token in this namespace.")).not.toBeNull());
    expect(screen.getByTestId("command-1").textContent).toBe("export TAPSCOPE_TOKEN=<your-token>");
    fireEvent.click(screen.getByRole("button", { name: "I'll do this later" }));
    expect(closed).toBe(2);
  });

  test("opening step 2 again shows the same token: one token however often setup opens", async () => {
    hasSeen = false;
    forbidToken = false;
    calls.length = 0;
    for (let opening = 0; opening < 3; opening++) {
      render(<OnboardingOverlay orgId="org-1" namespaceId="ns-again" publicUrl={origin} onClose={() => {}} />);
      fireEvent.click(screen.getByRole("button", { name: "Python" }));
      await waitFor(() => expect(screen.getByTestId("command-1").textContent).toMatch(/^export TAPSCOPE_TOKEN=tsn_live_/));
      cleanup();
    }
    expect(calls.filter((c) => c.path === "/api/GenerateNamespaceToken").length).toBe(1);
    expect(tokens.get("ns-again")).toHaveLength(1);
  });

  test("a namespace that has a token gets none made unasked; 'make a new token' replaces an unused setup token", async () => {
    hasSeen = false;
    forbidToken = false;
    calls.length = 0;
    tokens.set("ns-has", [
      {
        tokenId: "old-1",
        name: "tsk_...OLDOLD",
        createTime: new Date().toISOString(),
        creatorEmail: "me@example.test",
        label: "Onboarding",
        lastUsedTime: null,
      },
    ]);
    render(<OnboardingOverlay orgId="org-1" namespaceId="ns-has" publicUrl={origin} onClose={() => {}} />);
    fireEvent.click(screen.getByRole("button", { name: "Go" }));
    await waitFor(() => expect(screen.getByTestId("command-1").textContent).toBe("export TAPSCOPE_TOKEN=<your token tsk_...OLDOLD>"));
    expect(screen.getByTestId("existing-token").textContent).toContain("A token is shown only when it is made");
    expect(calls.filter((c) => c.path === "/api/GenerateNamespaceToken").length).toBe(0);
    fireEvent.click(screen.getByRole("button", { name: "make a new token" }));
    await waitFor(() => expect(screen.getByTestId("command-1").textContent).toMatch(/^export TAPSCOPE_TOKEN=tsn_live_new/));
    expect(calls.find((c) => c.path === "/api/DeleteNamespaceToken")?.body).toEqual({ tokenId: "old-1" });
    expect(tokens.get("ns-has")!.map((t) => t.label)).toEqual(["Onboarding"]);
    expect(tokens.get("ns-has")![0]!.tokenId).not.toBe("old-1");
  });
});
