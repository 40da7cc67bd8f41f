import { afterEach, describe, expect, test } from "bun:test";
import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import { ErrorNotice } from "~/ui/components/error-notice.tsx";
import { alertError, describeError, toApiError } from "~/ui/lib/api.ts";
import { encodeTags } from "~/ui/lib/events.ts";
import { isWorkerRecent, namespaceNameFromEmail, namespacePath } from "~/ui/pages/dashboard/dashboard-state.ts";
import { NamespaceSwitcher } from "~/ui/pages/dashboard/namespace-switcher.tsx";
import { AppErrorScreen } from "~/ui/pages/error/app-error-screen.tsx";
import { defaultShell, ShellProvider } from "~/ui/shell.tsx";

afterEach(cleanup);

describe("api helper errors", () => {
  test("carry the status, the trace id and the server's error text", async () => {
    const response = new Response(JSON.stringify({ error: "forbidden: not an admin" }), {
      status: 403,
      headers: { "x-trace-id": "abc123", "content-type": "application/json" },
    });
    const err = await toApiError(response);
    expect(err.message).toBe("got unexpected status code 403 (trace id abc123): forbidden: not an admin");
    expect(err.status).toBe(403);
  });

  test("without a JSON body or trace id only the status is said", async () => {
    const err = await toApiError(new Response("<html>bad gateway</html>", { status: 502 }));
    expect(err.message).toBe("got unexpected status code 502");
  });
});

describe("API errors as users read them", () => {
  const failed = (status: number, error?: string) =>
    toApiError(new Response(error ? JSON.stringify({ error }) : "", { status, headers: { "x-trace-id": "tr-42" } }));

  test("a refused name reads as the server's sentence; the trace id is only on the details line", async () => {
    const alerts: string[] = [];
    alertError("Could not create the namespace", await failed(400, "invalid namespace name: use 1 to 63 letters"), (text) =>
      alerts.push(text),
    );
    expect(alerts).toEqual([
      "Could not create the namespace: Invalid namespace name: use 1 to 63 letters.\n\nDetails: status 400, trace id tr-42",
    ]);
  });

  test("statuses get our own words, never 'got unexpected status code'", async () => {
    expect(describeError(await failed(404, "link not found"), { notFound: "This link does not exist." })).toEqual({
      message: "This link does not exist.",
      details: "Details: status 404, trace id tr-42",
    });
    expect(describeError(await failed(500, "db exploded at /var/lib/x")).message).toBe(
      "Something went wrong on the server. Try again in a moment.",
    );
    expect(describeError(await failed(403, "forbidden: not an admin")).message).toBe("You don't have permission to do this.");
    expect(describeError(new TypeError("Failed to fetch"))).toEqual({
      message: "Could not reach the server. Check your connection and try again.",
      details: null,
    });
  });

  test("the notice shows the message and a small details line", async () => {
    render(<ErrorNotice error={describeError(await failed(503))} lead="Could not open the live view:" />);
    const alert = screen.getByRole("alert");
    expect(alert.firstElementChild?.textContent).toBe(
      "Could not open the live view: The service is unavailable right now. Try again in a moment.",
    );
    expect(screen.getByTestId("error-details").textContent).toBe("Details: status 503, trace id tr-42");
  });
});

describe("dashboard helpers", () => {
  test("the Requests link shows only for a worker seen within 7 days", () => {
    const now = Date.parse("2026-05-08T00:00:00Z");
    expect(isWorkerRecent(null, now)).toBe(false);
    expect(isWorkerRecent(undefined, now)).toBe(false);
    expect(isWorkerRecent("2026-05-01T00:00:01Z", now)).toBe(true);
    expect(isWorkerRecent("2026-04-30T23:59:59Z", now)).toBe(false);
  });

  test("switching namespace keeps the current screen", () => {
    expect(namespacePath("prod", "/dashboard/dev/tokens")).toBe("/dashboard/prod/tokens");
    expect(namespacePath("a b", "/dashboard/billing")).toBe("/dashboard/a%20b/live");
  });

  test("a new user's first namespace is named from the e-mail", () => {
    expect(namespaceNameFromEmail("Ada.Lovelace+x@example.test")).toBe("ada-lovelace-x");
    expect(namespaceNameFromEmail("@x")).toBe("default");
  });

  test("event tags are one URL-encoded header value", () => {
    expect(encodeTags({ kind: "UncaughtAppBoundaryError", error_message: "a=b&c;", skip: undefined })).toBe(
      "kind=UncaughtAppBoundaryError;error_message=a%3Db%26c%3B",
    );
  });
});

describe("namespace switcher", () => {
  const namespaces = [
    { namespaceId: "1", name: "dev", orgId: "o1" },
    { namespaceId: "2", name: "prod", orgId: "o1" },
  ];

  test("opens, selects, and closes on an outside click", () => {
    const selected: string[] = [];
    let creates = 0;
    render(
      <div>
        <p>outside</p>
        <NamespaceSwitcher
          namespaces={namespaces}
          current={namespaces[0]!}
          onSelect={(ns) => selected.push(ns.name)}
          onCreate={() => creates++}
        />
      </div>,
    );
    const toggle = screen.getByRole("button", { name: "Switch namespace" });
    expect(toggle.textContent).toContain("dev");
    fireEvent.click(toggle);
    expect(screen.getAllByRole("menuitem").map((item) => item.textContent)).toEqual(["dev✓", "prod", "+ Create namespace"]);
    fireEvent.mouseDown(screen.getByText("outside"));
    expect(screen.queryByRole("menu")).toBeNull();
    fireEvent.click(toggle);
    fireEvent.click(screen.getByRole("menuitem", { name: "prod" }));
    expect(selected).toEqual(["prod"]);
    expect(screen.queryByRole("menu")).toBeNull();
    fireEvent.click(toggle);
    fireEvent.click(screen.getByRole("menuitem", { name: "+ Create namespace" }));
    expect(creates).toBe(1);
  });

  test("a member of several orgs sees each org's namespaces under its name", () => {
    const selected: string[] = [];
    const orgs = [
      { orgId: "o1", name: "me@example.test", lastSeenWorkerTime: null },
      { orgId: "o2", name: "team@example.test", lastSeenWorkerTime: null },
    ];
    render(
      <NamespaceSwitcher
        namespaces={[...namespaces, { namespaceId: "3", name: "prod", orgId: "o2" }]}
        orgs={orgs}
        current={namespaces[0]!}
        onSelect={(ns) => selected.push(ns.namespaceId)}
        onCreate={() => {}}
      />,
    );
    fireEvent.click(screen.getByRole("button", { name: "Switch namespace" }));
    const team = screen.getByRole("group", { name: "team@example.test" });
    expect(team.textContent).toBe("team@example.testprod");
    expect(screen.getByRole("group", { name: "me@example.test" }).textContent).toBe("me@example.testdev✓prod");
    fireEvent.click(team.querySelector("[role=menuitem]")!);
    expect(selected).toEqual(["3"]);
  });

  test("shows a loading state before the list arrives", () => {
    render(<NamespaceSwitcher namespaces={null} current={null} onSelect={() => {}} onCreate={() => {}} />);
    expect(screen.queryByText(/Loading namespaces/)).not.toBeNull();
  });
});

describe("app-wide error screen", () => {
  test("shows the spec's message with the support address, the error name, message and stack, as text", () => {
    const err = new TypeError("<img src=x onerror=alert(1)> is not a function");
    render(
      <ShellProvider shell={{ ...defaultShell, config: { ...defaultShell.config, supportEmail: "help@example.test" } }}>
        <AppErrorScreen error={err} />
      </ShellProvider>,
    );
    expect(document.body.textContent).toContain(
      "Tapscope ran into a problem. You can refresh the page to see if that fixes the issue. If not, reach out to help@example.test and include the following details",
    );
    expect(document.body.textContent).toContain("TypeError: <img src=x onerror=alert(1)> is not a function");
    expect(document.querySelector("img")).toBeNull();
  });
});
