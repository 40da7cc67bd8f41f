import { LiveFrameApp } from "~/ui/live/frame-app.tsx";

/** /iframer: the live frame the dashboard embeds. */
export function IframerPage() {
  return (
    <>
      <title>Live | Tapscope</title>
      <LiveFrameApp />
    </>
  );
}
