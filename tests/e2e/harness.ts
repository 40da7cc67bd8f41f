import { afterAll, beforeAll } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { freePort } from "../support/ports.ts";
import { startSmtpServer } from "../support/smtp.ts";

export const root = resolve(import.meta.dir, "../..");
export const artifactsDir = join(root, "test-artifacts");
const bun = join(root, "node_modules/.bin/bun");

/** Builds build/client once per test process, as `npm start` does before serving. */
let built: Promise<void> | undefined;
export function buildClient(): Promise<void> {
  built ??= (async () => {
    const proc = Bun.spawn([bun, join(root, "scripts/build-client.ts")], { cwd: root, stdout: "pipe", stderr: "pipe" });
    if ((await proc.exited) !== 0) throw new Error(`client build failed: ${await new Response(proc.stderr).text()}`);
  })();
  return built;
}

export type RunningServer = { baseUrl: string; logs: string[]; stop: () => Promise<void> };

/** The real server as a subprocess (`tapscope server`), on a free port, with a fresh PGlite data dir. */
export async function startServer(env: Record<string, string> = {}): Promise<RunningServer> {
  await buildClient();
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), "tapscope-e2e-"));
  const baseUrl = `http://127.0.0.1:${port}`;
  const proc = Bun.spawn([bun, join(root, "src/main.ts"), "server"], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "/tmp",
      PORT: String(port),
      PUBLIC_URL: baseUrl,
      DATA_DIR: dataDir,
      ...env,
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  const logs: string[] = [];
  void collect(proc.stderr, logs);
  void collect(proc.stdout, logs);
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const res = await fetch(`${baseUrl}/api/health`, { signal: AbortSignal.timeout(2000) });
      if (res.ok) break;
    } catch {
      // not up yet
    }
    if (proc.exitCode !== null) throw new Error(`server exited early:\n${logs.join("")}`);
    if (Date.now() > deadline) {
      // Not left running behind the failed test.
      proc.kill("SIGKILL");
      await proc.exited;
      rmSync(dataDir, { recursive: true, force: true });
      throw new Error(`server did not start:\n${logs.join("")}`);
    }
    await Bun.sleep(100);
  }
  return {
    baseUrl,
    logs,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function collect(stream: ReadableStream<Uint8Array>, into: string[]) {
  const decoder = new TextDecoder();
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    into.push(decoder.decode(value));
  }
}

export type RunningBrowser = { context: BrowserContext; close: () => Promise<void> };

/** Debian's Chromium, headless, with a fresh profile directory per launch. */
export async function launchBrowser(): Promise<RunningBrowser> {
  const profile = mkdtempSync(join(tmpdir(), "tapscope-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1280, height: 800 },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(artifactsDir, { recursive: true });
  await page.screenshot({ path: join(artifactsDir, `${name}.png`), fullPage: false });
}

/** Resolves once the page has hydrated: its route's chunk has loaded and its event handlers are attached. */
export async function waitForHydration(page: Page): Promise<void> {
  await page.waitForFunction(() => (window as unknown as { __TAPSCOPE_HYDRATED__?: boolean }).__TAPSCOPE_HYDRATED__ === true);
}

/** Fails the test on any uncaught page error or hydration mismatch, which the user would not see as text. */
export function watchPageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("pageerror", (err) => errors.push(`pageerror: ${err.message}`));
  page.on("console", (msg) => {
    if (msg.type() === "error" && /hydrat|did not match|Content Security Policy/i.test(msg.text())) errors.push(`console: ${msg.text()}`);
  });
  return errors;
}

/**
 * Signs in as a new or returning user the way a person does: the login form, the mailed link (the newest one to that
 * address: it may also have had invitations), the dashboard. Resolves with the path it lands on: the first namespace's
 * Live screen, or `landing` for a new user with invitations.
 */
export async function signInByEmail(
  page: Page,
  baseUrl: string,
  smtp: { messages: Array<{ to: string[]; text: string }> },
  email: string,
  landing: RegExp = /\/dashboard\/[^/]+\/live$/,
): Promise<string> {
  const before = smtp.messages.length;
  await page.goto(`${baseUrl}/login`);
  await waitForHydration(page);
  await page.getByPlaceholder("Enter your email...").fill(email);
  await page.getByRole("button", { name: "Sign in" }).click();
  const link = await mailedSignInLink(smtp, email, before);
  // The same browser that asked: the link's page signs in without asking.
  await page.goto(link);
  await page.waitForURL(landing);
  return new URL(page.url()).pathname;
}

/** The sign-in link of the first mail to `email` after the first `after` messages, waiting up to 10 s for it. */
export async function mailedSignInLink(
  smtp: { messages: Array<{ to: string[]; text: string }> },
  email: string,
  after = 0,
): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const mail = smtp.messages.slice(after).find((m) => m.to.includes(email) && signInLinkIn(m.text));
    if (mail) return signInLinkIn(mail.text) as string;
    if (Date.now() > deadline) throw new Error(`no sign-in link in a mail to ${email}`);
    await Bun.sleep(50);
  }
}

/** The sign-in link in a mail's text, or null. */
export function signInLinkIn(text: string): string | null {
  return /https?:\/\/[^\s"'<>]+\/login\/link\?[^\s"'<>]+/.exec(text)?.[0]?.replaceAll("&amp;", "&") ?? null;
}

/** A new token for the first namespace a signed-in page's user may see, asked for as the Tokens screen asks. */
export function namespaceTokenOf(page: Page): Promise<string> {
  return page.evaluate(async () => {
    const post = async (name: string, body: unknown) =>
      (await fetch(`/api/${name}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })).json();
    const { orgs } = await post("ListOrgs", {});
    const { namespaces } = await post("ListNamespaces", { orgId: orgs[0].orgId });
    return (await post("GenerateNamespaceToken", { namespaceId: namespaces[0].namespaceId })).token as string;
  });
}

export type PageSuite = { server: RunningServer; browser: RunningBrowser; page: Page; pageErrors: string[] };

async function startPageSuite(suite: PageSuite, env: Record<string, string>, timeoutMs?: number): Promise<void> {
  suite.server = await startServer(env);
  suite.browser = await launchBrowser();
  suite.page = await suite.browser.context.newPage();
  if (timeoutMs) suite.page.setDefaultTimeout(timeoutMs);
  suite.pageErrors = watchPageErrors(suite.page);
}

/**
 * The usual browser suite: a real server (with `env()`, read when the suite starts), Chromium and one page whose
 * uncaught errors are collected, started before the file's tests and stopped after. Read the fields inside tests.
 */
export function browserSuite(env: () => Record<string, string> = () => ({})): PageSuite {
  const suite = {} as PageSuite;
  beforeAll(() => startPageSuite(suite, env()), 120_000);
  afterAll(async () => {
    await suite.browser?.close();
    await suite.server?.stop();
  });
  return suite;
}

export type Person = { page: Page; pageErrors: string[] };

export type SignedInSuite = PageSuite & {
  /** The SMTP server the server mails its sign-in links (and invitations) to. */
  smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  /** Where the suite's page landed when it signed in as `email` (a new user's first namespace's Live screen). */
  home: string;
  /** Signs a page (the suite's own unless given) in as `email` the way a person does; resolves with where it lands. */
  signIn: (email: string, options?: { page?: Page; landing?: RegExp }) => Promise<string>;
  /** Another person: a browser with a profile of its own, signed in as `email` when given; closed with the suite. */
  newPerson: (email?: string) => Promise<Person>;
};

export type SignedInOptions = {
  /** Signs the suite's page in before the file's tests; without it, nobody is signed in until a test calls signIn. */
  email?: string;
  /** More of the server's environment (read when the suite starts); SMTP_URL is the suite's. */
  env?: () => Record<string, string>;
  /** Each page's default timeout for its waits, in ms. */
  timeoutMs?: number;
  /** Runs once the page exists and before it signs in: init scripts, routes, permissions, the viewport. */
  prepare?: (suite: SignedInSuite) => unknown;
};

/**
 * The browser suite of a signed-in user: an SMTP server, the real server mailing its sign-in links to it, Chromium
 * and one page signed in through the login form and the mailed link, as a person signs in.
 */
export function signedInSuite(options: SignedInOptions = {}): SignedInSuite {
  const suite = {} as SignedInSuite;
  const others: RunningBrowser[] = [];
  suite.signIn = (email, { page = suite.page, landing } = {}) => signInByEmail(page, suite.server.baseUrl, suite.smtp, email, landing);
  suite.newPerson = async (email) => {
    const browser = await launchBrowser();
    others.push(browser);
    const page = await browser.context.newPage();
    if (options.timeoutMs) page.setDefaultTimeout(options.timeoutMs);
    const person = { page, pageErrors: watchPageErrors(page) };
    if (email) await suite.signIn(email, { page });
    return person;
  };
  beforeAll(async () => {
    suite.smtp = await startSmtpServer();
    await startPageSuite(suite, { ...options.env?.(), SMTP_URL: suite.smtp.url }, options.timeoutMs);
    await options.prepare?.(suite);
    if (options.email) suite.home = await suite.signIn(options.email);
  }, 120_000);
  afterAll(async () => {
    for (const browser of others) await browser.close();
    await suite.browser?.close();
    await suite.server?.stop();
    await suite.smtp?.close();
  });
  return suite;
}

/** Whether the page scrolls sideways (nothing should, at any width). */
export function hasHorizontalScroll(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth);
}
