import { AppError } from "~/lib/errors.ts";
import { MAX_TOKEN_LABEL } from "~/lib/protocol/token-messages.ts";

/** A token's name as stored: trimmed, at most 64 characters, no control characters (it is shown in lists). */
export function cleanTokenLabel(label: string | undefined): string {
  const trimmed = (label ?? "").trim();
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses
  if (trimmed.length > MAX_TOKEN_LABEL || /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(trimmed)) {
    throw new AppError("BAD_REQUEST", `a token name is at most ${MAX_TOKEN_LABEL} characters, on one line`);
  }
  return trimmed;
}
