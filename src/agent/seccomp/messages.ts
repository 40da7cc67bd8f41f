/** Messages from the notification Worker to the supervisor on the main thread. */
type Base = { id: bigint; pid: number; fd: number };

export type ConnectMsg = Base & { kind: "connect"; addr: Uint8Array; domain: number };
export type BindMsg = Base & { kind: "bind"; addr: Uint8Array; domain: number };
export type ListenMsg = Base & { kind: "listen"; backlog: number; domain: number };
export type AcceptMsg = Base & { kind: "accept"; addrPtr: number; lenPtr: number; flags: number };
export type NameMsg = Base & { kind: "getsockname" | "getpeername"; addrPtr: number; lenPtr: number; domain: number };
export type NotifMessage = ConnectMsg | BindMsg | ListenMsg | AcceptMsg | NameMsg;

/** A read-only open of a possible trust file: the supervisor answers it (ADDFD with merged trust, or CONTINUE). */
export type TrustOpenMsg = { kind: "trust-open"; id: bigint; pid: number; path: string; isCloexec: boolean };

export type WorkerMessage =
  | NotifMessage
  | TrustOpenMsg
  | { kind: "started"; pid: number }
  | { kind: "io_uring"; pid: number }
  /** No traced process is left (the listener hung up): the loop has ended. */
  | { kind: "unused" }
  | { kind: "fatal"; reason: string; errno: number }
  | { kind: "crash"; error: string };

export type WorkerInit = {
  listener: number;
  /**
   * Opens handed to the supervisor: these paths, paths ending so (a JDK's stores), and the trust files a process's own
   * environment names (read after its exec). Null: opens are not trapped.
   */
  trustOpens: { paths: string[]; suffixes: string[]; ownDir: string } | null;
  /** Int32Array over a SharedArrayBuffer: [0] = 1 switches the Worker to passthrough. */
  control: SharedArrayBuffer;
};
