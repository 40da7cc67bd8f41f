import { afterAll, beforeAll } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { freePort } from "../support/ports.ts";

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
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const res = await fetch(`${baseUrl}/api/health`);
      if (res.ok) break;
    } catch {
      // not up yet
    }
    if (proc.exitCode !== null) throw new Error(`server exited early:\n${logs.join("")}`);
    if (Date.now() > deadline) throw new Error(`server did not start:\n${logs.join("")}`);
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

export type PageSuite = { server: RunningServer; browser: RunningBrowser; page: Page; pageErrors: string[] };

/**
 * The usual browser suite: a real server (with `env()`, read when the suite starts), Chromium and one page whose
 * uncaught errors are collected, started before the file's tests and stopped after. Read the fields inside tests.
 */
export function browserSuite(env: () => Record<string, string> = () => ({})): PageSuite {
  const suite = {} as PageSuite;
  beforeAll(async () => {
    suite.server = await startServer(env());
    suite.browser = await launchBrowser();
    suite.page = await suite.browser.context.newPage();
    suite.pageErrors = watchPageErrors(suite.page);
  }, 60_000);
  afterAll(async () => {
    await suite.browser?.close();
    await suite.server?.stop();
  });
  return suite;
}

/** Whether the page scrolls sideways (nothing should, at any width). */
export function hasHorizontalScroll(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth);
}
