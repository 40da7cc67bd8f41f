import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { LoaderFunctionArgs } from "react-router";
import { emptySite } from "~/lib/site-content.ts";
import type { PageEnv } from "~/ui/env.ts";
import { discordLoader } from "~/ui/pages/marketing/changelog-page.tsx";
import { renderContent } from "../../scripts/docs/render-content.ts";
import { ROOT } from "../agent/harness.ts";
import { startTestApp, type TestApp } from "../support/app.ts";

// The operator-edited content/ as visitors get it (npm test builds the client, and so the content, first).
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ backend: "pglite" });
}, 60_000);
afterAll(() => t.close());

describe("customers, changelog and the community link", () => {
  test("a case study: its title as the page title, company, website, industry, story, the Example label and the call to try", async () => {
    const res = await t.request("/customers/example-payments");
    expect(res.status).toBe(200);
    const html = String(res.body);
    expect(html).toContain("<title>How a payments team found a 400 ms retry loop in an afternoon | Tapscope</title>");
    for (const text of ["Example Payments Co.", "example.com", "Fintech (example)", "The problem", ">Example<", "Try Tapscope for free"])
      expect(html).toContain(text);
  });

  test("/customers lists every story; an unknown one is a 404", async () => {
    const html = String((await t.request("/customers")).body);
    expect(html).toContain('href="/customers/example-payments"');
    expect(html).toContain('href="/customers/example-logistics"');
    expect((await t.request("/customers/nobody")).status).toBe(404);
  });

  test("/changelog shows content/changelog.md's releases", async () => {
    const html = String((await t.request("/changelog")).body);
    expect(html).toContain("0.1.0");
    expect(html).toContain("HTTPS capture");
  });

  test("/discord goes to the configured community link, or says there is none", async () => {
    const env = (discordUrl: string | null): PageEnv => ({
      getSelf: async () => null,
      getDocs: async () => ({ index: [], page: null }),
      getContent: async () => [] as never,
      getSite: () => ({ ...emptySite, discordUrl }),
    });
    const args = (context: PageEnv) => ({ context, request: new Request("http://x/discord"), params: {} }) as unknown as LoaderFunctionArgs;
    const to = discordLoader(args(env("https://discord.example/invite")));
    expect(to?.status).toBe(302);
    expect(to?.headers.get("location")).toBe("https://discord.example/invite");
    expect(discordLoader(args(env(null)))).toBeNull();
    const page = String((await t.request("/discord")).body);
    expect(page).toContain("There is no community chat here yet. For help, write to");
  });

  test("visitors read no operator's notes, and no link goes to what is not set up", async () => {
    const pages = [
      "/",
      "/customers",
      "/customers/example-payments",
      "/customers/example-logistics",
      "/discord",
      "/changelog",
      "/pricing",
      "/blog",
    ];
    for (const path of pages) {
      const res = await t.request(path);
      // The visible text: the page without its scripts (the hydration data carries the content's file names).
      const text = String(res.body)
        .replace(/<script[\s\S]*?<\/script>/g, "")
        .replace(/<[^>]+>/g, " ");
      for (const note of ["content/", "site.json", "discordUrl", "Replace it", "an operator", "operator lists"])
        expect(`${path}: ${text.includes(note) ? note : "none"}`).toBe(`${path}: none`);
      // content/site.json has no community link: nothing links to /discord.
      expect(`${path}: ${String(res.body).includes('href="/discord"')}`).toBe(`${path}: false`);
    }
  });

  test("malformed content stops the build with the file named", () => {
    const { customers } = renderContent(`${ROOT}/content`, { usage: () => "" });
    expect(customers.every((c) => c.isExample)).toBe(true);
    expect(() => renderContent("/nonexistent", { usage: () => "" })).toThrow();
  });
});
