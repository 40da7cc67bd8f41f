/**
 * Renders docs/site/*.md at build time: YAML front matter (title, section, order, description) and GitHub-flavoured
 * markdown (marked) with syntax highlighting (highlight.js), heading ids for the on-page contents, raw HTML shown as
 * text. A fenced block of language `usage` holds the arguments of a `tapscope` command (e.g. `run --help`): it is
 * replaced by what that command prints, so the CLI reference is the CLI's own usage text.
 */
import { readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import hljs from "highlight.js/lib/common";
import { Marked, type Tokens } from "marked";
import { DOC_SECTIONS, DOC_SLUG, type DocHeading, type DocIndexEntry, type DocPage, sortDocIndex } from "../../src/lib/docs.ts";

export type RenderedDocs = { index: DocIndexEntry[]; pages: DocPage[] };
export type RenderOptions = {
  usage: (args: string[]) => string;
  /** Where `include` blocks find their files (the repository root); without it an include stops the build. */
  root?: string;
};

const escapeHtml = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");

/** Every page of `dir`; a page with missing or wrong front matter stops the build with its file named. */
export function renderDocs(dir: string, options: RenderOptions): RenderedDocs {
  const pages = readdirSync(dir)
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => renderPage(basename(name, ".md"), readFileSync(join(dir, name), "utf8"), options));
  const index = sortDocIndex(pages.map(({ slug, title, section, order, description }) => ({ slug, title, section, order, description })));
  return { index, pages };
}

/** The YAML front matter of a markdown file and the text after it; the file is named in the error when there is none. */
export function splitFrontMatter(source: string, where: string): { meta: Record<string, unknown>; body: string } {
  const match = /^---\n([\s\S]*?)\n---\n/.exec(source);
  if (!match) throw new Error(`${where}: no front matter (--- title, section, order, description ---)`);
  const meta = Bun.YAML.parse(match[1]!);
  if (!meta || typeof meta !== "object" || Array.isArray(meta)) throw new Error(`${where}: the front matter is not a YAML mapping`);
  return { meta: meta as Record<string, unknown>, body: source.slice(match[0].length) };
}

export function renderPage(slug: string, source: string, options: RenderOptions): DocPage {
  const where = `docs/site/${slug}.md`;
  if (!DOC_SLUG.test(slug)) throw new Error(`${where}: the file name must be lowercase words joined by dashes`);
  const { meta, body } = splitFrontMatter(source, where);
  const title = meta.title;
  const section = meta.section;
  const order = meta.order;
  const description = meta.description;
  if (typeof title !== "string" || !title) throw new Error(`${where}: front matter needs a title`);
  if (typeof section !== "string" || !(DOC_SECTIONS as readonly string[]).includes(section))
    throw new Error(`${where}: section must be one of ${DOC_SECTIONS.join(", ")}`);
  if (typeof order !== "number") throw new Error(`${where}: order must be a number`);
  if (typeof description !== "string" || !description) throw new Error(`${where}: front matter needs a description`);
  const { html, headings } = renderMarkdown(body, where, options);
  return { slug, title, section, order, description, html, headings };
}

/**
 * Markdown to HTML as every page of the site gets it: GFM, highlighted code, heading ids (h2/h3 listed), raw HTML
 * shown as text, links only absolute, #anchors, http(s) or mailto (external ones with rel=noopener).
 */
export function renderMarkdown(source: string, where: string, options: RenderOptions): { html: string; headings: DocHeading[] } {
  const headings: DocHeading[] = [];
  const ids = new Set<string>();
  const marked = new Marked({
    gfm: true,
    renderer: {
      heading({ tokens, depth }: Tokens.Heading) {
        const inner = this.parser.parseInline(tokens);
        const text = this.parser.parseInline(tokens, this.parser.textRenderer);
        if (depth === 1) return `<h1>${inner}</h1>\n`;
        let id = text
          .toLowerCase()
          .replace(/&[a-z0-9#]+;/g, "")
          .replace(/[^a-z0-9]+/g, "-")
          .replace(/^-|-$/g, "");
        for (let n = 2; ids.has(id); n++) id = `${id.replace(/-\d+$/, "")}-${n}`;
        ids.add(id);
        if (depth === 2 || depth === 3) headings.push({ id, text: decodeEntities(text), depth });
        return `<h${depth} id="${id}"><a href="#${id}" class="heading-anchor">${inner}</a></h${depth}>\n`;
      },
      code({ text, lang }: Tokens.Code) {
        const language = (lang ?? "").trim().split(/\s+/)[0] ?? "";
        if (language === "include") return includeSection(text.trim(), where, options);
        if (language === "usage") {
          const printed = options.usage(text.trim().split(/\s+/));
          return `<pre class="code"><code class="hljs language-text">${escapeHtml(printed.trimEnd())}</code></pre>\n`;
        }
        const body =
          language && hljs.getLanguage(language) ? hljs.highlight(text, { language, ignoreIllegals: true }).value : escapeHtml(text);
        return `<pre class="code"><code class="hljs language-${escapeHtml(language || "text")}">${body}</code></pre>\n`;
      },
      html({ text }: Tokens.HTML | Tokens.Tag) {
        return escapeHtml(text);
      },
      link({ href, title, tokens }: Tokens.Link) {
        const inner = this.parser.parseInline(tokens);
        const isExternal = /^https?:\/\//.test(href);
        const isOwn = href.startsWith("/") || href.startsWith("#") || href.startsWith("{{server}}/");
        if (!isExternal && !isOwn && !href.startsWith("mailto:"))
          throw new Error(`${where}: link "${href}" must be absolute (/docs/...), a #heading, http(s) or mailto`);
        const titleAttr = title ? ` title="${escapeHtml(title)}"` : "";
        const rel = isExternal ? ' rel="noopener noreferrer"' : "";
        return `<a href="${escapeHtml(href)}"${titleAttr}${rel}>${inner}</a>`;
      },
    },
  });
  return { html: marked.parse(source, { async: false }), headings };
}

/**
 * An `include` block names a file of the repository and one of its `##` sections (`README.md ## Configuration
 * (server)`): that section is rendered in its place, so a table kept in the README is not written twice.
 */
function includeSection(spec: string, where: string, options: RenderOptions): string {
  const m = /^(\S+)\s+##\s+(.+)$/.exec(spec);
  if (!m || !options.root) throw new Error(`${where}: an include block reads "<file> ## <section heading>"`);
  const file = m[1]!;
  if (file.includes("..") || file.startsWith("/")) throw new Error(`${where}: include a file inside the repository`);
  const text = readFileSync(join(options.root, file), "utf8");
  const start = text.indexOf(`\n## ${m[2]}\n`);
  if (start < 0) throw new Error(`${where}: ${file} has no section "## ${m[2]}"`);
  const body = text.slice(start + m[2]!.length + 5);
  const end = body.search(/^## /m);
  return renderMarkdown(end < 0 ? body : body.slice(0, end), `${where} (from ${file})`, options).html;
}

function decodeEntities(text: string): string {
  return text
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, "&");
}
