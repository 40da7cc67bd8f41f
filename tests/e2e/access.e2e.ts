import { beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { hasHorizontalScroll, mailedSignInLink, type RunningServer, type SignedInSuite, screenshot, signedInSuite } from "./harness.ts";

// Taking access back, as people click it: an admin invites, the invited person accepts on their own dashboard, the
// admin removes them, signs them out everywhere, revokes an invitation, deletes a namespace; and a sign-in link opened
// in a browser that did not ask for it. Each person has a browser (profile) of their own.
let smtp: SignedInSuite["smtp"];
let server: RunningServer;
/** Each page's uncaught errors (checked by the last test). */
const pageErrorLists: string[][] = [];
let admin: Page;
let bob: Page;

const ADMIN = "admin@example.test";
const BOB = "bob@example.test";
const CAROL = "carol@example.test";

const suite = signedInSuite({ email: ADMIN, timeoutMs: 20_000 });

async function newPerson(email?: string): Promise<Page> {
  const person = await suite.newPerson(email);
  pageErrorLists.push(person.pageErrors);
  return person.page;
}

/** The same moment at both widths people use: a desktop and a phone (which must not scroll sideways). */
async function bothWidths(page: Page, name: string): Promise<void> {
  await page.setViewportSize({ width: 1440, height: 900 });
  await screenshot(page, `access-${name}-1440`);
  await page.setViewportSize({ width: 390, height: 844 });
  await screenshot(page, `access-${name}-390`);
  expect(await hasHorizontalScroll(page), name).toBe(false);
  await page.setViewportSize({ width: 1440, height: 900 });
}

async function usersScreen(page: Page, namespace: string): Promise<void> {
  await page.goto(`${server.baseUrl}/dashboard/${namespace}/users`);
  await page.getByRole("region", { name: "Namespace admins" }).waitFor();
}

async function invite(address: string): Promise<void> {
  await admin.getByLabel("Email to invite").fill(address);
  await admin.getByRole("button", { name: "Invite" }).click();
  await admin.getByRole("button", { name: `Revoke the invitation to ${address}` }).waitFor();
}

/** The invited person's dashboard: the banner, Accept, and they land on the namespace they joined. */
async function accept(page: Page, namespace: string): Promise<void> {
  await page.goto(`${server.baseUrl}/dashboard`);
  const invitation = page.getByRole("article", { name: `Invitation to ${namespace}` });
  await invitation.getByRole("button", { name: "Accept" }).click();
  await page.waitForURL(new RegExp(`/dashboard/${namespace}/live$`));
}

beforeAll(async () => {
  ({ smtp, server, page: admin } = suite);
  pageErrorLists.push(suite.pageErrors);
  bob = await newPerson(BOB);
}, 60_000);

describe("taking access back, in Chromium against the real server", () => {
  test("an invited account joins only when it accepts, on its own dashboard; both orgs are in its switcher", async () => {
    await usersScreen(admin, "admin");
    await invite(BOB);
    const members = admin.getByRole("region", { name: "Namespace members" });
    // Invited, not joined: in a list of its own until Bob accepts.
    const invited = admin.getByRole("region", { name: "Invited" });
    await invited.getByText(BOB).waitFor();
    expect(await members.getByText(BOB).count()).toBe(0);

    // Bob's own dashboard: the invitation waits above it; nothing of the admin's is his yet.
    await bob.goto(`${server.baseUrl}/dashboard`);
    await bob.getByRole("article", { name: "Invitation to admin" }).waitFor();
    expect(await bob.getByRole("article", { name: "Invitation to admin" }).textContent()).toContain(`${ADMIN} invited you`);
    await bothWidths(bob, "invitation-banner");
    await accept(bob, "admin");
    await bob.getByRole("button", { name: "Switch namespace" }).click();
    await bob.getByRole("group", { name: ADMIN }).getByRole("menuitem", { name: "admin" }).waitFor();
    await bob.getByRole("group", { name: BOB }).getByRole("menuitem", { name: "bob" }).waitFor();
    await bothWidths(bob, "switcher-two-orgs");
    await bob.keyboard.press("Escape");

    await usersScreen(admin, "admin");
    await members.getByText(BOB).waitFor();
    expect(await admin.getByRole("region", { name: "Invited" }).count()).toBe(0);
    await bothWidths(admin, "users-admin");
  }, 60_000);

  test("remove: a confirmation (with the tokens they created), then the member is gone and their dashboard no longer has it", async () => {
    await admin.getByRole("button", { name: `Remove ${BOB}` }).click();
    const dialog = admin.getByRole("dialog", { name: `Remove ${BOB}?` });
    await dialog.waitFor();
    expect(await dialog.getByRole("checkbox").isChecked()).toBe(true);
    await bothWidths(admin, "remove-dialog");
    // Cancel changes nothing.
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await admin.getByRole("region", { name: "Namespace members" }).getByText(BOB).waitFor();

    await admin.getByRole("button", { name: `Remove ${BOB}` }).click();
    await admin.getByRole("dialog").getByRole("button", { name: "Remove" }).click();
    await admin.getByText(`${BOB} was removed, with 0 tokens they created.`).waitFor();
    expect(await admin.getByRole("region", { name: "Namespace members" }).getByText(BOB).count()).toBe(0);

    // An old link to the namespace says it is not his (it does not quietly open another one), and offers his own.
    await bob.goto(`${server.baseUrl}/dashboard/admin/users`);
    await bob.getByRole("heading", { name: "There is no namespace named “admin”" }).waitFor();
    expect(new URL(bob.url()).pathname).toBe("/dashboard/admin/users");
    await bothWidths(bob, "namespace-not-found");
    await bob.getByRole("link", { name: "bob" }).click();
    await bob.waitForURL(/\/dashboard\/bob\/live$/);
    await bob.getByRole("button", { name: "Switch namespace" }).click();
    expect(await bob.getByRole("menuitem", { name: "admin" }).count()).toBe(0);
    await bob.keyboard.press("Escape");
  }, 60_000);

  test("sign out everywhere: after the confirmation, the member's next page is the sign-in form", async () => {
    await invite(BOB);
    await accept(bob, "admin");
    await usersScreen(admin, "admin");
    await admin.getByRole("button", { name: `Sign ${BOB} out everywhere` }).click();
    const dialog = admin.getByRole("dialog", { name: `Sign ${BOB} out everywhere?` });
    await dialog.getByRole("button", { name: "Sign out" }).click();
    await admin.getByText(`${BOB} was signed out (1 session).`).waitFor();
    await bob.goto(`${server.baseUrl}/dashboard/admin/live`);
    await bob.waitForURL(/\/login\?next=/);
    // Still a member: signing in again brings them back.
    await suite.signIn(BOB, { page: bob, landing: /\/dashboard\/[^/]+\/live$/ });
  }, 60_000);

  test("revoke an invitation; a new user invited before signing up chooses on a welcome screen", async () => {
    await usersScreen(admin, "admin");
    await invite(CAROL);
    await admin.getByRole("button", { name: `Revoke the invitation to ${CAROL}` }).click();
    await admin.getByRole("dialog").getByRole("button", { name: "Revoke" }).click();
    await admin.getByText(`The invitation to ${CAROL} was revoked.`).waitFor();
    expect(await admin.getByRole("button", { name: `Revoke the invitation to ${CAROL}` }).count()).toBe(0);

    await invite(CAROL);
    const carol = await newPerson();
    await suite.signIn(CAROL, { page: carol, landing: /\/dashboard$/ });
    await carol.getByRole("heading", { name: "You are invited" }).waitFor();
    await bothWidths(carol, "invited-welcome");
    await carol.getByRole("article", { name: "Invitation to admin" }).getByRole("button", { name: "Accept" }).click();
    await carol.waitForURL(/\/dashboard\/admin\/live$/);
  }, 60_000);

  test("delete a namespace: type its name to confirm; everyone lands elsewhere", async () => {
    admin.once("dialog", (dialog) => void dialog.accept("scratch"));
    await admin.getByRole("button", { name: "Switch namespace" }).click();
    await admin.getByRole("menuitem", { name: "+ Create namespace" }).click();
    await admin.waitForURL(/\/dashboard\/scratch\/users$/);
    await admin.getByRole("region", { name: "Delete namespace" }).waitFor();
    await admin.getByRole("button", { name: "Delete namespace…" }).click();
    const dialog = admin.getByRole("dialog", { name: "Delete scratch?" });
    const confirm = dialog.getByRole("button", { name: "Delete namespace" });
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByLabel("Namespace name to confirm").fill("scratc");
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByLabel("Namespace name to confirm").fill("scratch");
    await bothWidths(admin, "delete-namespace-dialog");
    await confirm.click();
    await admin.waitForURL(/\/dashboard\/admin\/live$/);
    await admin.getByRole("button", { name: "Switch namespace" }).click();
    expect(await admin.getByRole("menuitem", { name: "scratch" }).count()).toBe(0);
    await admin.keyboard.press("Escape");
    // The org's last namespace stays: the server says why.
    await usersScreen(admin, "admin");
    let alerted = "";
    admin.once("dialog", (d) => {
      alerted = d.message();
      void d.accept();
    });
    await admin.getByRole("button", { name: "Delete namespace…" }).click();
    await admin.getByRole("dialog").getByLabel("Namespace name to confirm").fill("admin");
    await admin.getByRole("dialog").getByRole("button", { name: "Delete namespace" }).click();
    await admin.getByRole("dialog").waitFor({ state: "detached" });
    expect(alerted).toContain("An organization keeps at least one namespace");
  }, 60_000);

  test("a sign-in link opened in another browser asks first: Cancel signs nobody in; a scanner's fetch spent nothing", async () => {
    // Someone asks for a link to their own address elsewhere (a script here) and sends it on.
    const before = smtp.messages.length;
    const asked = await fetch(`${server.baseUrl}/api/EmailLogin`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: server.baseUrl },
      body: JSON.stringify({ email: "mallory@example.test" }),
    });
    expect(asked.status).toBe(200);
    const link = await mailedSignInLink(smtp, "mallory@example.test", before);
    // A mail scanner or a chat preview fetches it first.
    expect((await fetch(link)).status).toBe(200);
    expect((await fetch(link, { method: "HEAD" })).status).toBe(200);

    const victim = await newPerson();
    await victim.goto(link);
    await victim.getByRole("heading", { name: "Sign in as mallory@example.test?" }).waitFor();
    await bothWidths(victim, "link-confirm");
    await victim.getByRole("button", { name: "Cancel" }).click();
    await victim.waitForURL(/\/login$/);
    expect((await victim.request.get(`${server.baseUrl}/api/GetSelf`)).status()).toBe(401);

    // The link is still good: the person who did ask for it confirms.
    await victim.goto(link);
    await victim.getByRole("button", { name: "Sign in as mallory@example.test" }).click();
    await victim.waitForURL(/\/dashboard\/[^/]+\/live$/);
  }, 60_000);

  test("no hydration errors or uncaught page errors along the way", () => {
    expect(pageErrorLists.flat()).toEqual([]);
  });
});
