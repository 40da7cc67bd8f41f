/** The pages made to be framed or shared: the live frame (/iframer) and a shared link's viewer (/link/{id}). */
export { IframerPage } from "~/ui/pages/frames/iframer-page.tsx";
export { LinkViewerPage } from "~/ui/pages/frames/link-viewer-page.tsx";
