/**
 * Renders content/ at build time (see content/README.md): site.json, customers/*.md (front matter and a markdown
 * story) and changelog.md (`## <version> (<date>)` sections). A malformed file stops the build with its name.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { DOC_SLUG } from "../../src/lib/docs.ts";
import type { ChangelogEntry, CustomerStory, SiteContent, SiteInfo } from "../../src/lib/site-content.ts";
import { type RenderOptions, renderMarkdown, splitFrontMatter } from "./render-docs.ts";

export function renderContent(dir: string, options: RenderOptions): SiteContent {
  return {
    site: readSite(join(dir, "site.json")),
    customers: readCustomers(join(dir, "customers"), options),
    changelog: readChangelog(join(dir, "changelog.md"), options),
  };
}

function readSite(path: string): SiteInfo {
  const raw = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
  const text = (key: keyof SiteInfo): string | null => {
    const value = raw[key];
    if (value === null || value === undefined) return null;
    if (typeof value !== "string" || value.length > 200)
      throw new Error(`content/site.json: ${key} must be a string (at most 200 characters) or null`);
    if (key.endsWith("Url") && !/^https?:\/\//.test(value)) throw new Error(`content/site.json: ${key} must be an http(s) URL`);
    return value;
  };
  return {
    starCount: text("starCount"),
    repoUrl: text("repoUrl"),
    discordUrl: text("discordUrl"),
    socialUrl: text("socialUrl"),
    backedBy: text("backedBy"),
  };
}

function readCustomers(dir: string, options: RenderOptions): CustomerStory[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => {
      const slug = basename(name, ".md");
      const where = `content/customers/${name}`;
      if (!DOC_SLUG.test(slug)) throw new Error(`${where}: the file name must be lowercase words joined by dashes`);
      const { meta, body } = splitFrontMatter(readFileSync(join(dir, name), "utf8"), where);
      const required = (key: string): string => {
        const value = meta[key];
        if (typeof value !== "string" || !value.trim()) throw new Error(`${where}: front matter needs ${key}`);
        return value;
      };
      const optional = (key: string): string | null => (typeof meta[key] === "string" && meta[key] ? (meta[key] as string) : null);
      const website = required("website");
      if (!/^https?:\/\//.test(website)) throw new Error(`${where}: website must be an http(s) URL`);
      return {
        slug,
        company: required("company"),
        title: required("title"),
        website,
        industry: required("industry"),
        description: required("description"),
        quote: optional("quote"),
        person: optional("person"),
        role: optional("role"),
        isExample: meta.example === true,
        html: renderMarkdown(body, where, options).html,
      };
    });
}

function readChangelog(path: string, options: RenderOptions): ChangelogEntry[] {
  if (!existsSync(path)) return [];
  const entries: ChangelogEntry[] = [];
  const parts = readFileSync(path, "utf8").split(/^## /m).slice(1);
  for (const part of parts) {
    const newline = part.indexOf("\n");
    const heading = part.slice(0, newline < 0 ? undefined : newline).trim();
    const m = /^(\S+)\s+\((unreleased|\d{4}-\d{2}-\d{2})\)$/.exec(heading);
    if (!m) throw new Error(`content/changelog.md: "## ${heading}" must read "## <version> (<YYYY-MM-DD or unreleased>)"`);
    entries.push({
      version: m[1]!,
      date: m[2]!,
      html: renderMarkdown(newline < 0 ? "" : part.slice(newline + 1), "content/changelog.md", options).html,
    });
  }
  return entries;
}
