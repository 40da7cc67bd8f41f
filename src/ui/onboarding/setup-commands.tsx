import { useCopy } from "../request-detail/use-copy.ts";
import { useSetupToken } from "./setup-token.ts";
import { setupCommands } from "./stacks.ts";

/**
 * The three steps that connect a program to a namespace: install the agent, export a token, run the program under
 * `tapscope run`, each with a copy button. The token is the one setup made (once per namespace, useSetupToken); when
 * the namespace already has one, its masked name stands in and a new one can be made.
 */
export function SetupCommands({
  namespaceId,
  publicUrl,
  run,
  tokensHref,
}: {
  namespaceId: string;
  publicUrl: string;
  /** The program's command line. */
  run: string;
  /** The Tokens screen, for a namespace that has tokens already. */
  tokensHref?: string;
}) {
  const { setup, replace } = useSetupToken(namespaceId, true);
  const { copiedKey, copy } = useCopy();
  const token = setup.status === "new" ? setup.token : setup.status === "existing" ? `<your token ${setup.masked}>` : "<your-token>";
  const commands = setupCommands(run, publicUrl, token);

  return (
    <div>
      <ol className="space-y-2">
        {commands.map((command, i) => (
          <li key={command} className="flex items-center gap-2">
            <code
              data-testid={`command-${i}`}
              className="min-w-0 flex-1 rounded-md bg-zinc-950 px-3 py-2 font-mono text-xs break-all whitespace-pre-wrap text-zinc-100"
            >
              {command}
            </code>
            <button
              type="button"
              aria-label={`Copy command ${i + 1}`}
              onClick={() => copy(`cmd-${i}`, command)}
              className="w-16 shrink-0 rounded-md border border-zinc-700 px-2 py-1.5 text-xs text-zinc-300 hover:bg-zinc-800"
            >
              {copiedKey === `cmd-${i}` ? "✓" : "Copy"}
            </button>
          </li>
        ))}
      </ol>
      {setup.status === "failed" ? <p className="mt-2 text-xs text-red-400">{setup.message}</p> : null}
      {setup.status === "new" ? (
        <p className="mt-2 text-xs text-zinc-500">
          This token is shown once; it is listed (masked, named {`"Onboarding"`}) on the Tokens screen.
        </p>
      ) : null}
      {setup.status === "existing" ? (
        <p data-testid="existing-token" className="mt-2 text-xs text-zinc-400">
          This namespace has a token already ({setup.existing.label ? `${setup.existing.label}, ` : ""}
          <span className="font-mono">{setup.masked}</span>). A token is shown only when it is made: use the one you saved
          {tokensHref ? (
            <>
              {" "}
              (
              <a href={tokensHref} className="text-zinc-200 underline">
                Tokens
              </a>
              )
            </>
          ) : null}
          , or{" "}
          <button type="button" onClick={() => void replace()} className="text-zinc-100 underline hover:text-white">
            make a new token
          </button>
          {setup.existing.label === "Onboarding" && setup.existing.lastUsedTime === null ? " (it replaces the unused setup token)" : ""}.
        </p>
      ) : null}
    </div>
  );
}
