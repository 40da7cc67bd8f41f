/** Messages from the notification Worker to the supervisor on the main thread. */
type Base = { id: bigint; pid: number; fd: number };

export type ConnectMsg = Base & { kind: "connect"; addr: Uint8Array; domain: number };
export type BindMsg = Base & { kind: "bind"; addr: Uint8Array; domain: number };
export type ListenMsg = Base & { kind: "listen"; backlog: number; domain: number };
export type AcceptMsg = Base & { kind: "accept"; addrPtr: number; lenPtr: number; flags: number };
export type NameMsg = Base & { kind: "getsockname" | "getpeername"; addrPtr: number; lenPtr: number; domain: number };
export type NotifMessage = ConnectMsg | BindMsg | ListenMsg | AcceptMsg | NameMsg;

export type WorkerMessage =
  | NotifMessage
  | { kind: "started"; pid: number }
  | { kind: "io_uring"; pid: number }
  /** No traced process is left (the listener hung up): the loop has ended. */
  | { kind: "unused" }
  | { kind: "fatal"; reason: string; errno: number }
  | { kind: "crash"; error: string };

export type WorkerInit = {
  listener: number;
  /** Opens of these absolute paths are answered with `file` (the run's merged CA bundle). */
  trustBundle: { file: string; paths: string[] } | null;
  /** Int32Array over a SharedArrayBuffer: [0] = 1 switches the Worker to passthrough. */
  control: SharedArrayBuffer;
};
