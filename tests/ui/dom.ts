// DOM globals for UI tests only (tests/ui/*.ui.tsx run in their own `bun test --preload ./tests/ui/dom.ts` process).
// Server tests never load this: happy-dom replaces fetch/Response/WebSocket.
import { GlobalRegistrator } from "@happy-dom/global-registrator";

GlobalRegistrator.register({ url: "http://localhost:3000/", width: 1280, height: 800 });
