import { beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { type RunningServer, type SignedInSuite, screenshot, signedInSuite, waitForHydration } from "./harness.ts";

// Signing in is what these tests are about: they go through it step by step instead of letting the suite sign in.
const suite = signedInSuite({
  env: () => ({ SUPPORT_EMAIL: "help@example.test" }),
  // Generous: CI machines run other suites alongside.
  timeoutMs: 20_000,
  prepare: ({ browser, server }) => browser.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.baseUrl }),
});
let smtp: SignedInSuite["smtp"];
let server: RunningServer;
let page: Page;
let pageErrors: string[];
const email = "ada@example.test";

beforeAll(() => {
  ({ smtp, server, page, pageErrors } = suite);
});

describe("sign-in and the dashboard, in Chromium against the real server", () => {
  test("a signed-out visitor of a dashboard page is sent to /login with next", async () => {
    await page.goto(`${server.baseUrl}/dashboard/somewhere/tokens`);
    expect(new URL(page.url()).pathname).toBe("/login");
    expect(new URL(page.url()).searchParams.get("next")).toBe("/dashboard/somewhere/tokens");
    await page.goto(`${server.baseUrl}/dashboard`);
    expect(page.url()).toBe(`${server.baseUrl}/login`);
  });

  test("login: no OAuth buttons without configuration; the magic link is mailed and confirmed", async () => {
    await page.goto(`${server.baseUrl}/login`);
    await page.getByRole("heading", { name: "Get started" }).waitFor();
    expect(await page.getByText("Sign into your account").isVisible()).toBe(true);
    expect(await page.getByText("Continue with Google").count()).toBe(0);
    await waitForHydration(page);
    await screenshot(page, "01-login");

    await page.getByPlaceholder("Enter your email...").fill(email);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByText(`We emailed a magic link to ${email}. Click the link to continue. Need help? Contact support.`).waitFor();
    await screenshot(page, "02-login-sent");
  });

  test("the link from the delivered mail signs in and lands on the first namespace's Live screen", async () => {
    const mail = await smtp.waitFor(email);
    const link = /https?:\/\/[^\s"'<>]+\/login\/link\?[^\s"'<>]+/.exec(mail.text)?.[0];
    expect(link).toBeDefined();
    await page.goto(link!.replaceAll("&amp;", "&"));
    await page.waitForURL(/\/dashboard\/[^/]+\/live$/);
    await page.getByRole("heading", { name: "Live" }).waitFor();
    const switcher = page.getByRole("button", { name: "Switch namespace" });
    expect((await switcher.textContent())?.trim().length).toBeGreaterThan(0);
    await screenshot(page, "03-dashboard-live");

    // Signed in: /login and /dashboard both go to the dashboard.
    await page.goto(`${server.baseUrl}/login`);
    await page.waitForURL(/\/dashboard\/[^/]+\/live$/);
  });

  test("create a namespace through the switcher; it is selected and in the URL; outside click closes", async () => {
    await page.getByRole("button", { name: "Switch namespace" }).click();
    await page.getByRole("menu").waitFor();
    await page.getByRole("heading", { name: "Live" }).click();
    await page.getByRole("menu").waitFor({ state: "detached" });

    page.once("dialog", (dialog) => void dialog.accept("staging"));
    await page.getByRole("button", { name: "Switch namespace" }).click();
    await screenshot(page, "04-namespace-menu");
    await page.getByRole("menuitem", { name: "+ Create namespace" }).click();
    await page.waitForURL(/\/dashboard\/staging\/live$/);
    await page
      .getByRole("button", { name: "Switch namespace" })
      .filter({ hasText: /^staging$/ })
      .waitFor();

    // An empty name aborts.
    page.once("dialog", (dialog) => void dialog.accept(""));
    await page.getByRole("button", { name: "Switch namespace" }).click();
    await page.getByRole("menuitem", { name: "+ Create namespace" }).click();
    await page.getByRole("button", { name: "Switch namespace" }).click();
    expect(await page.getByRole("menuitem").count()).toBe(3);
    await page.keyboard.press("Escape");
  });

  test("tokens: create shows it once, copy, NEW badge, delete with confirmation", async () => {
    await page.getByRole("link", { name: "Tokens" }).click();
    await page.waitForURL(/\/dashboard\/staging\/tokens$/);
    await page.getByText("No tokens yet").waitFor();
    await page.getByRole("button", { name: "Create" }).click();
    const dialog = page.getByRole("dialog", { name: "New token" });
    await dialog.waitFor();
    const token = (await page.getByTestId("new-token").textContent())!.trim();
    expect(token).toMatch(/^tsk_[A-Za-z0-9_-]{43}$/);
    expect(await dialog.textContent()).toContain("cannot be viewed again");
    await page.getByRole("button", { name: "Copy token" }).click();
    await page.getByText("Copied!").waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(token);
    await screenshot(page, "05-token-created");
    await page.getByRole("button", { name: "Done" }).click();

    // The token works as a bearer for this namespace (shown once, then usable).
    const masked = `tsk_...${token.slice(-6)}`;
    const row = page.getByRole("listitem").filter({ hasText: masked });
    await row.waitFor();
    expect(await row.getByText("NEW").isVisible()).toBe(true);
    expect(await row.getByText(email).isVisible()).toBe(true);
    expect(await page.getByText(token).count()).toBe(0);
    await row.hover();
    await screenshot(page, "06-tokens-list");
    await row.getByRole("button", { name: `Delete token ${masked}` }).click();
    await page.getByText(`Are you sure you want to delete token ${masked}? This action cannot be undone.`).waitFor();
    await screenshot(page, "07-token-delete-confirm");
    await page.getByRole("button", { name: "Delete", exact: true }).click();
    await page.getByText("No tokens yet").waitFor();

    await page.getByRole("button", { name: "Show advanced settings" }).click();
    await page.getByRole("region", { name: "Organization worker tokens" }).waitFor();
  });

  test("users: invite an address; admins and members are listed with counts", async () => {
    await page.getByRole("link", { name: "Users" }).click();
    await page.waitForURL(/\/dashboard\/staging\/users$/);
    const admins = page.getByRole("region", { name: "Namespace admins" });
    await admins.getByText(email).waitFor();
    await page.getByLabel("Email to invite").fill("bob@example.test");
    await page.getByRole("button", { name: "Invite" }).click();
    await page.getByRole("region", { name: "Invited" }).getByText("bob@example.test").waitFor();
    expect(await page.getByLabel("Email to invite").inputValue()).toBe("");
    expect(await page.getByRole("columnheader", { name: "Joined" }).count()).toBe(2);
    await screenshot(page, "08-users");
    // Phones: the navigation is a drawer that starts closed and closes after navigating.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await page.getByRole("navigation", { name: "Dashboard" }).isVisible()).toBe(false);
    await screenshot(page, "08b-users-phone");
    await page.getByRole("button", { name: "Show navigation" }).click();
    await page.getByRole("navigation", { name: "Dashboard" }).waitFor();
    await screenshot(page, "08c-nav-drawer-phone");
    await page.getByRole("link", { name: "Tokens" }).click();
    await page.waitForURL(/\/tokens$/);
    await page.getByRole("navigation", { name: "Dashboard" }).waitFor({ state: "hidden" });
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.getByRole("navigation", { name: "Dashboard" }).waitFor();
    await page.getByRole("link", { name: "Users" }).click();
    await page.waitForURL(/\/users$/);
  });

  test("billing on a server without Stripe: says billing is off, shows the plans", async () => {
    await page.getByRole("link", { name: "Billing" }).click();
    await page.waitForURL(/\/dashboard\/billing$/);
    await page.getByText("Billing is off on this server").waitFor();
    expect(await page.getByRole("region", { name: "Free" }).getByText("ACTIVE").count()).toBe(0);
    expect(await page.getByRole("region", { name: "Team" }).getByText("$25").isVisible()).toBe(true);
    expect(await page.getByRole("region", { name: "Scale" }).getByText("$599").isVisible()).toBe(true);
    expect(await page.getByRole("link", { name: "Contact us" }).getAttribute("href")).toStartWith("mailto:help@example.test");
    expect(await page.getByRole("button", { name: "Switch namespace" }).textContent()).toContain("staging");
    await screenshot(page, "08d-billing");
    await page.getByRole("link", { name: "Users" }).click();
    await page.waitForURL(/\/staging\/users$/);
  });

  test("the navigation can be hidden, and stays hidden after a reload", async () => {
    await page.getByRole("button", { name: "Hide navigation" }).click();
    await page.reload();
    await page.getByRole("button", { name: "Show navigation" }).waitFor();
    expect(await page.getByRole("navigation", { name: "Dashboard" }).count()).toBe(0);
    await screenshot(page, "09-nav-hidden");
    await page.getByRole("button", { name: "Show navigation" }).click();
    await page.getByRole("navigation", { name: "Dashboard" }).waitFor();
  });

  test("/dashboard remembers the last namespace", async () => {
    await page.goto(`${server.baseUrl}/dashboard`);
    await page.waitForURL(/\/dashboard\/staging\/live$/);
  });

  test("a namespace's address without a screen opens its Live screen", async () => {
    const res = await page.goto(`${server.baseUrl}/dashboard/staging`);
    expect(res?.request().redirectedFrom()?.url()).toBe(`${server.baseUrl}/dashboard/staging`);
    await page.waitForURL(/\/dashboard\/staging\/live$/);
    await page.getByRole("heading", { name: "Live", exact: true }).waitFor();
    expect(await page.getByText("Loading your workspace…").count()).toBe(0);
    // In-app navigation to the bare address is redirected by the browser router too.
    await page.evaluate(() => {
      window.history.pushState({}, "", "/dashboard/staging");
      window.dispatchEvent(new PopStateEvent("popstate"));
    });
    await page.waitForURL(/\/dashboard\/staging\/live$/);
  });

  test("a refused namespace name is explained in words, with the trace id only on a details line", async () => {
    const alerts: string[] = [];
    const onDialog = (dialog: import("playwright-core").Dialog) => {
      if (dialog.type() === "prompt") return void dialog.accept("no spaces here");
      alerts.push(dialog.message());
      void dialog.dismiss();
    };
    page.on("dialog", onDialog);
    await page.getByRole("button", { name: "Switch namespace" }).click();
    await page.getByRole("menuitem", { name: "+ Create namespace" }).click();
    for (let i = 0; i < 100 && alerts.length === 0; i++) await Bun.sleep(50);
    page.off("dialog", onDialog);
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatch(
      /^Could not create the namespace: Invalid namespace name: use 1 to 63 letters[^\n]*\.\n\nDetails: status 400, trace id \S+$/,
    );
    expect(alerts[0]).not.toContain("unexpected status code");
  });

  test("a failure while starting the app shows the app-wide error screen and reports it", async () => {
    // The network answers ListOrgs with a 500 for this one page load; everything else is the real server.
    await page.route("**/api/ListOrgs", (route) =>
      route.fulfill({
        status: 500,
        contentType: "application/json",
        headers: { "x-trace-id": "trace-e2e" },
        body: JSON.stringify({ error: "database unavailable" }),
      }),
    );
    const report = page.waitForRequest((req) => req.url().endsWith("/api/Event") && req.method() === "POST");
    await page.goto(`${server.baseUrl}/dashboard`);
    await page.getByText("Tapscope ran into a problem.", { exact: false }).waitFor();
    expect(await page.locator("main").textContent()).toContain("If not, reach out to help@example.test and include the following details");
    expect(await page.locator("pre").textContent()).toContain(
      "ApiError: got unexpected status code 500 (trace id trace-e2e): database unavailable",
    );
    const request = await report;
    const tags = Object.fromEntries((request.headers()["x-tags"] ?? "").split(";").map((pair) => pair.split("=").map(decodeURIComponent)));
    expect(tags.kind).toBe("UncaughtAppBoundaryError");
    expect(tags.error_name).toBe("ApiError");
    expect((await request.response())?.status()).toBe(200);
    await screenshot(page, "12-app-error");
    await page.unroute("**/api/ListOrgs");
  });

  test("an account without an org is onboarded from the app: OnboardNewUser with a name from the e-mail", async () => {
    // The server onboards at first sign-in, so the network plays an org-less answer once to reach this path.
    await page.route("**/api/ListOrgs", (route) => route.fulfill({ status: 200, contentType: "application/json", body: '{"orgs":[]}' }));
    const onboard = page.waitForRequest((req) => req.url().endsWith("/api/OnboardNewUser"));
    await page.goto(`${server.baseUrl}/dashboard`);
    const request = await onboard;
    expect(JSON.parse(request.postData() ?? "{}")).toEqual({ namespaceName: "ada" });
    expect((await request.response())?.status()).toBe(200);
    await page.waitForURL(/\/dashboard\/ada\/live$/);
    await page.unroute("**/api/ListOrgs");
  });

  test("log out ends the session", async () => {
    await page.goto(`${server.baseUrl}/dashboard`);
    await page.waitForURL(/\/dashboard\/[^/]+\/live$/);
    await page.getByRole("link", { name: "Log out" }).click();
    await page.waitForURL(/\/login$/);
    await page.goto(`${server.baseUrl}/dashboard/staging/live`);
    expect(new URL(page.url()).pathname).toBe("/login");
  });

  test("signing in again from a deep link returns to that page (next survives the magic link)", async () => {
    const before = smtp.messages.length;
    await page.goto(`${server.baseUrl}/dashboard/staging/tokens`);
    await page.waitForURL(/\/login\?next=/);
    await page.getByPlaceholder("Enter your email...").fill(email);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByText(/We emailed a magic link/).waitFor();
    const deadline = Date.now() + 10_000;
    while (smtp.messages.length === before && Date.now() < deadline) await Bun.sleep(50);
    const mail = smtp.messages[before];
    expect(mail).toBeDefined();
    const link = /https?:\/\/[^\s"'<>]+\/login\/link\?[^\s"'<>]+/.exec(mail!.text)?.[0];
    await page.goto(link!.replaceAll("&amp;", "&"));
    await page.waitForURL(/\/dashboard\/staging\/tokens$/);
    await page.getByRole("heading", { name: "Tokens", exact: true }).waitFor();
  });

  test("unknown routes answer 404 with the router fallback; every public page answers 200", async () => {
    const response = await page.goto(`${server.baseUrl}/no/such/page`);
    expect(response?.status()).toBe(404);
    await page.getByText("Unexpected Application Error!").waitFor();
    await screenshot(page, "10-not-found");
    for (const path of [
      "/",
      "/pricing",
      "/docs",
      "/docs/golang",
      "/changelog",
      "/discord",
      "/customers/example-payments",
      "/blog",
      "/blog/http2-preface",
      "/blog/grpc-debugging",
      "/link/abc123",
      "/iframer",
      "/minified/",
    ]) {
      const res = await page.goto(`${server.baseUrl}${path}`);
      expect(`${path} ${res?.status()}`).toBe(`${path} 200`);
    }
    await page.goto(`${server.baseUrl}/`);
    await screenshot(page, "11-landing");
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${server.baseUrl}/login`);
    await screenshot(page, "11b-login-phone");
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`${server.baseUrl}/link`);
    expect(page.url()).toBe(`${server.baseUrl}/`);
  });

  test("no hydration errors or uncaught page errors along the way", () => {
    expect(pageErrors).toEqual([]);
  });
});
