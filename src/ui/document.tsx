import type { ReactNode } from "react";
import { useShell } from "~/ui/shell.tsx";

/** The whole HTML document, rendered on the server and hydrated as `document` on the client. */
export function Document({ children }: { children: ReactNode }) {
  const { assets } = useShell();
  return (
    <html lang="en" className="dark">
      <head>
        <meta charSet="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="color-scheme" content="dark" />
        <link rel="icon" href="data:," />
        {assets.css.map((href) => (
          <link key={href} rel="stylesheet" href={href} />
        ))}
        {/* Low, like the entry React links: the page is already rendered; these wait behind the stylesheet. */}
        {assets.preload.map((href) => (
          <link key={href} rel="modulepreload" href={href} fetchPriority="low" />
        ))}
      </head>
      <body className="min-h-dvh bg-zinc-950 font-sans text-zinc-200 antialiased">{children}</body>
    </html>
  );
}
