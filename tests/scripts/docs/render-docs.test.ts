import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { DOC_SECTIONS, searchDocs } from "~/lib/docs.ts";
import { renderDocs, renderPage } from "../../../scripts/docs/render-docs.ts";
import { ROOT } from "../../agent/harness.ts";

const usage = (args: string[]) => `usage of ${args.join(" ")}\n`;
const front = (extra = "") => `---\ntitle: A page\nsection: Guides\norder: 2\ndescription: What it is.\n${extra}---\n`;

describe("docs rendering (build time)", () => {
  test("headings get unique ids and make the on-page contents; code is highlighted; raw HTML is shown as text", () => {
    const page = renderPage(
      "a-page",
      `${front()}# Title\n\n## Install it\n\n\`\`\`js\nconst a = "x";\n\`\`\`\n\n<img src=x onerror=alert(1)>\n\n## Install it\n\n### Then \`run\`\n`,
      { usage },
    );
    expect(page.headings).toEqual([
      { id: "install-it", text: "Install it", depth: 2 },
      { id: "install-it-2", text: "Install it", depth: 2 },
      { id: "then-run", text: "Then run", depth: 3 },
    ]);
    expect(page.html).toContain('<h2 id="install-it">');
    expect(page.html).toContain('<span class="hljs-keyword">const</span>');
    expect(page.html).toContain("&lt;img src=x onerror=alert(1)&gt;");
    expect(page.html).not.toContain("<img");
    expect(page).toMatchObject({ slug: "a-page", title: "A page", section: "Guides", order: 2, description: "What it is." });
  });

  test("a `usage` block is replaced by what the CLI prints for those arguments", () => {
    const page = renderPage("cli", `${front()}\`\`\`usage\nrun --help\n\`\`\`\n`, { usage });
    expect(page.html).toContain("usage of run --help");
  });

  test("an `include` block renders a section of a repository file (the README's variables are written once)", () => {
    const page = renderPage("s", `${front()}\`\`\`include\nREADME.md ## Configuration (server)\n\`\`\`\n`, { usage, root: ROOT });
    expect(page.html).toContain("<code>DATABASE_URL</code>");
    expect(page.html).toContain("<table>");
    expect(() => renderPage("s", `${front()}\`\`\`include\n../etc/passwd ## x\n\`\`\`\n`, { usage, root: ROOT })).toThrow(
      "inside the repository",
    );
    expect(() => renderPage("s", `${front()}\`\`\`include\nREADME.md ## No such section\n\`\`\`\n`, { usage, root: ROOT })).toThrow(
      'has no section "## No such section"',
    );
  });

  test("bad front matter and relative links stop the build with the file named", () => {
    expect(() => renderPage("x", "# no front matter\n", { usage })).toThrow("docs/site/x.md: no front matter");
    expect(() => renderPage("x", "---\ntitle: X\nsection: Elsewhere\norder: 1\ndescription: d\n---\n", { usage })).toThrow(
      `section must be one of ${DOC_SECTIONS.join(", ")}`,
    );
    expect(() => renderPage("x", "---\nsection: Guides\norder: 1\ndescription: d\n---\n", { usage })).toThrow("needs a title");
    expect(() => renderPage("Bad_Name", front(), { usage })).toThrow("lowercase words joined by dashes");
    expect(() => renderPage("x", `${front()}[see](other-page)\n`, { usage })).toThrow('link "other-page" must be absolute');
  });

  test("the shipped docs render, every /docs link points to a page that exists, the spec's stack pages are there", () => {
    const docs = renderDocs(join(ROOT, "docs/site"), { usage, root: ROOT });
    const slugs = new Set(docs.index.map((entry) => entry.slug));
    for (const required of [
      "quickstart",
      "cli",
      "filters",
      "https",
      "database-calls",
      "self-hosting",
      "troubleshooting",
      "nodejs-express",
      "python-fastapi",
      "golang",
      "php-laravel",
      "docker",
      "kubernetes",
    ])
      expect(slugs.has(required)).toBe(true);
    for (const page of docs.pages) {
      for (const [, target] of page.html.matchAll(/href="\/docs\/([a-z0-9-]+)/g)) {
        expect({ from: page.slug, to: target, exists: slugs.has(target!) }).toEqual({ from: page.slug, to: target, exists: true });
      }
    }
  });

  test("search over titles and descriptions: every word must match, title matches first", () => {
    const index = [
      { slug: "https", title: "HTTPS capture", section: "Guides", order: 1, description: "Decrypting TLS calls." },
      { slug: "tls-notes", title: "Troubleshooting", section: "Help", order: 1, description: "When https is not decrypted." },
    ];
    expect(searchDocs(index, "https").map((e) => e.slug)).toEqual(["https", "tls-notes"]);
    expect(searchDocs(index, "https decrypted").map((e) => e.slug)).toEqual(["tls-notes"]);
    expect(searchDocs(index, "kubernetes")).toEqual([]);
    expect(searchDocs(index, "  ")).toEqual(index);
  });
});
