import { useParams } from "react-router";
import { LinkViewer, linkIdFromPath } from "~/ui/link/link-page.tsx";
import { usePublicConfig } from "~/ui/shell.tsx";

/** /link/{id}: a shared link's live view. */
export function LinkViewerPage() {
  const params = useParams();
  const { commitHash } = usePublicConfig();
  return (
    <>
      <title>Shared link | Tapscope</title>
      <LinkViewer linkId={linkIdFromPath(params["*"] ?? "") ?? ""} commitHash={commitHash} />
    </>
  );
}
