import { type ReactNode, useEffect, useRef, useState } from "react";
import { Link } from "react-router";
import { PostLayout } from "./post-layout.tsx";
import { type ByteRange, PREFACE, prefaceBytes, printable, RANGES, SETTINGS } from "./preface-bytes.ts";

const bytes = prefaceBytes();
const hex = (b: number) => b.toString(16).padStart(2, "0");

/** /blog/http2-preface: the first 51 bytes of every HTTP/2 connection, highlighted as the article explains them. */
export function Http2PrefacePost() {
  const [active, setActive] = useState<ByteRange>(RANGES[0]!);
  const article = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const root = article.current;
    if (!root || typeof IntersectionObserver === "undefined") return;
    // The section nearest the top of the reading area (below the sticky viewer) picks the range.
    const observer = new IntersectionObserver(
      (entries) => {
        const visible = entries.filter((e) => e.isIntersecting).sort((a, b) => a.boundingClientRect.top - b.boundingClientRect.top);
        const id = (visible[0]?.target as HTMLElement | undefined)?.dataset.range;
        const range = RANGES.find((r) => r.id === id);
        if (range) setActive(range);
      },
      { rootMargin: "-45% 0px -45% 0px" },
    );
    for (const section of root.querySelectorAll<HTMLElement>("[data-range]")) observer.observe(section);
    return () => observer.disconnect();
  }, []);
  return (
    <PostLayout title="Every byte explained" date="May 30, 2025" subtitle="The first 51 bytes of every HTTP/2 connection, one by one.">
      {/* On wide screens the bytes reach out of the column, far enough for 16 a row. */}
      <div className="sticky top-14 z-10 -mx-4 border-b border-zinc-900 bg-zinc-950/95 px-4 py-4 backdrop-blur xl:-mx-14">
        <HexViewer active={active} />
      </div>
      <div ref={article} className="docs-prose mt-8">
        <Section range="preface" title="The connection preface">
          <p>
            Before anything else, an HTTP/2 client sends 24 fixed bytes: <code>PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n</code>. It looks like an
            HTTP/1 request on purpose: a server that only speaks HTTP/1 sees a method it does not know and fails fast, instead of waiting
            for a body. A tracer that sees these bytes knows the rest of the connection is HTTP/2 frames, which is how Tapscope tells h2c
            from HTTP/1 without any configuration.
          </p>
        </Section>
        <Section range="settings" title="The SETTINGS frame">
          <p>
            Right after the preface comes a SETTINGS frame: the client's parameters for this connection. Every frame has the same shape, a
            9-byte header and a payload whose length the header gives.
          </p>
        </Section>
        <Section range="header" title="The frame header">
          <p>
            Three bytes of length (<code>00 00 12</code>: 18 bytes of payload), one byte of type (<code>04</code>: SETTINGS), one byte of
            flags (none, so this is not an acknowledgement) and four bytes of stream identifier (<code>0</code>: settings belong to the
            connection, not to a stream).
          </p>
        </Section>
        <Section range="payload" title="The payload">
          <p>Eighteen bytes: three settings of six bytes each, a 16-bit identifier and a 32-bit value.</p>
        </Section>
        {SETTINGS.map((setting, i) => (
          <Section key={setting.name} range={RANGES[4 + i]!.id} title={setting.name}>
            <p>
              Identifier <code>0x{setting.id.toString(16)}</code>, value <code>{setting.value.toLocaleString("en-US")}</code>.{" "}
              {settingText[i]}
            </p>
          </Section>
        ))}
        <h2 id="what-tapscope-does">What Tapscope does with it</h2>
        <p>
          Tapscope's HTTP/2 parser reads these bytes off the wire as the program sends them, decodes the HPACK headers that follow, and
          turns each stream into one request in the dashboard. Try it on your own server: <Link to="/docs/quickstart">the quickstart</Link>{" "}
          takes a minute.
        </p>
      </div>
    </PostLayout>
  );
}

const settingText: ReactNode[] = [
  "The server may open at most this many streams towards the client at once.",
  "Server push off: the client does not want resources it did not ask for.",
  "The flow-control window for each new stream: 16 times the 65,535-byte default, so large responses are not throttled.",
];

function Section({ range, title, children }: { range: string; title: string; children: ReactNode }) {
  const id = RANGES.find((r) => r.id === range)?.id ?? range;
  return (
    <section data-range={range} aria-labelledby={`h-${id}`} className="min-h-[40vh]">
      <h2 id={`h-${id}`}>{title}</h2>
      {children}
    </section>
  );
}

function HexViewer({ active }: { active: ByteRange }) {
  return (
    <figure className="@container">
      <figcaption className="mb-2 flex items-center justify-between text-xs text-zinc-400">
        <span>
          {PREFACE.length} + {bytes.length - PREFACE.length} bytes
        </span>
        <span aria-live="polite" className="font-mono text-emerald-300">
          {active.label}: bytes {active.start}–{active.end - 1}
        </span>
      </figcaption>
      <ol className="grid grid-cols-8 gap-1 font-mono text-xs @min-[640px]:grid-cols-12 @min-[1200px]:grid-cols-16" aria-label="The bytes">
        {[...bytes].map((b, i) => {
          const isOn = i >= active.start && i < active.end;
          return (
            <li
              // biome-ignore lint/suspicious/noArrayIndexKey: a byte's position is its identity
              key={i}
              data-offset={i}
              data-active={isOn ? "true" : undefined}
              className={`flex flex-col items-center rounded px-1 py-1 transition-colors motion-reduce:transition-none ${
                isOn ? "bg-emerald-500/20 text-emerald-200" : "text-zinc-400"
              }`}
            >
              <span>{hex(b)}</span>
              <span className="text-zinc-500">{printable(b)}</span>
            </li>
          );
        })}
      </ol>
    </figure>
  );
}
