import { AppError } from "~/lib/errors.ts";

/** Names appear in dashboard URLs (/dashboard/{name}/live): URL-safe characters only. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._@+-]{0,62}$/;

export function validNamespaceName(raw: string): string {
  const name = raw.trim();
  if (!NAME.test(name)) {
    throw new AppError(
      "BAD_REQUEST",
      "invalid namespace name: use 1 to 63 letters, digits, '.', '_', '-', '+' or '@', starting with a letter or digit",
    );
  }
  return name;
}

/** A first namespace name from an e-mail address: its local part, cleaned to the allowed characters. */
export function namespaceNameFromEmail(email: string): string {
  const local = (email.split("@")[0] ?? "").replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^[^A-Za-z0-9]+/, "");
  return (local || "default").slice(0, 63);
}
