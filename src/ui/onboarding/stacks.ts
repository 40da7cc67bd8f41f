export type Stack = "python" | "node" | "next" | "go" | "other";

export const stacks: Array<{ id: Stack; label: string; run: string }> = [
  { id: "python", label: "Python", run: "python3 main.py" },
  { id: "node", label: "Node.js", run: "node server.js" },
  { id: "next", label: "Next.js", run: "npm run start" },
  { id: "go", label: "Go", run: "./main" },
  { id: "other", label: "Other", run: "<your command>" },
];

/** A stack's command line (what runs under the agent). */
export function runCommand(stack: Stack): string {
  return stacks.find((s) => s.id === stack)?.run ?? "<your command>";
}

/** The three shell lines of setup: install the agent, export the token, run the app (its command line) under the agent. */
export function setupCommands(run: string, publicUrl: string, token: string): string[] {
  return [`curl -fsSL ${publicUrl.replace(/\/+$/, "")}/install.sh | sh`, `export TAPSCOPE_TOKEN=${token}`, `tapscope run -- ${run}`];
}
