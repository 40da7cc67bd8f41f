import { afterEach, describe, expect, test } from "bun:test";
import { cleanup, render, screen } from "@testing-library/react";
import { createMemoryRouter, RouterProvider } from "react-router";
import { SiteFooter, SiteHeader } from "~/ui/pages/marketing/site-chrome.tsx";
import { defaultShell, type PageShell, ShellProvider } from "~/ui/shell.tsx";

afterEach(cleanup);

// The site's header and footer link only to what the operator has set up: no stories, no Customers; no community
// link, no Discord.
function renderChrome(shell: PageShell) {
  const router = createMemoryRouter([
    {
      path: "/",
      element: (
        <ShellProvider shell={shell}>
          <SiteHeader />
          <SiteFooter />
        </ShellProvider>
      ),
    },
  ]);
  render(<RouterProvider router={router} />);
  return screen.getAllByRole("link").map((a) => a.getAttribute("href"));
}

describe("site chrome", () => {
  test("without stories or a community link, nothing links to /customers or /discord", () => {
    const hrefs = renderChrome({ ...defaultShell, content: { customers: null, changelog: "/assets/changelog.json" } });
    expect(hrefs).not.toContain("/customers");
    expect(hrefs).not.toContain("/discord");
    expect(hrefs).toContain("/docs");
  });

  test("with them, both are linked from the header and the footer", () => {
    const hrefs = renderChrome({
      ...defaultShell,
      site: { ...defaultShell.site, discordUrl: "https://discord.example/invite" },
      content: { customers: "/assets/customers.json", changelog: "/assets/changelog.json" },
    });
    expect(hrefs.filter((h) => h === "/customers")).toHaveLength(2);
    expect(hrefs.filter((h) => h === "/discord")).toHaveLength(2);
  });
});
