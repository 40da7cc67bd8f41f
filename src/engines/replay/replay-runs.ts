import { randomUUID } from "node:crypto";
import type { NodeCalls } from "~/engines/cluster/node-calls.ts";
import { AppError, errorMessage } from "~/lib/errors.ts";
import type { ForwardedReplayAnswer } from "~/lib/protocol/cluster.ts";
import { noReplayRunText, type ReplayAnswer, type ReplayOrder, replayLimits } from "~/lib/protocol/replay.ts";

/** A run's publish socket that said it allows replays: how to hand it an order. */
export type ReplayRun = { namespaceId: string; service: string; send(order: ReplayOrder): void };

type Pending = {
  runKey: object;
  resolve: (answer: ReplayAnswer) => void;
  reject: (err: Error) => void;
  timer: ReturnType<typeof setTimeout>;
};

/** An order sent to another node, waiting for its answer: failed at once when that node is no longer heard from. */
type Forwarded = { nodeId: string; reject: (err: Error) => void };

/** How long a forwarded order waits: the holding node's own wait for its run, and the broker's round trip. */
export const forwardTimeoutMs = replayLimits.serverTimeoutMs + 5_000;

/**
 * The runs connected to this node that allow replays, by namespace, and the orders sent to them waiting for their
 * answer (bounded in number and time). A run's answer is taken only from the socket the order went to.
 *
 * On a cluster it also knows which namespaces the other nodes' runs serve (their presence says so, and lapses with it):
 * an order for a namespace with no run here is forwarded to a node that has one, which checks it again and sends it to
 * its own run (`sendLocal`).
 */
export class ReplayRuns {
  private readonly runs = new Map<object, ReplayRun>();
  private readonly pending = new Map<string, Pending>();
  /** Other nodes' replay-serving namespaces, by node. */
  private readonly remote = new Map<string, Set<string>>();
  private readonly forwarded = new Map<string, Forwarded>();

  constructor(
    private readonly deps: {
      /** A cluster's calls to its other nodes (absent: a single server). */
      calls?: Pick<NodeCalls, "request"> | null;
      /** The namespaces served here changed (the cluster tells the others now rather than at its next beat). */
      onChange?: () => void;
    } = {},
  ) {}

  /** The socket (its identity is the key) said hello with allowsReplay; again on a later hello replaces it. */
  register(key: object, run: ReplayRun): void {
    const had = this.runs.get(key)?.namespaceId;
    this.runs.set(key, run);
    if (had !== run.namespaceId) this.deps.onChange?.();
  }

  /** The socket closed: it serves no more orders, and those waiting on it fail now. */
  unregister(key: object): void {
    if (this.runs.delete(key)) this.deps.onChange?.();
    for (const [id, p] of this.pending) {
      if (p.runKey !== key) continue;
      this.pending.delete(id);
      clearTimeout(p.timer);
      p.reject(new AppError("UNAVAILABLE", "the run disconnected before it answered; the request may or may not have been sent"));
    }
  }

  /** Whether a run of the namespace allows replays now, on this node or another of the cluster. */
  has(namespaceId: string): boolean {
    return this.hasLocal(namespaceId) || this.remoteNodeFor(namespaceId) !== null;
  }

  private hasLocal(namespaceId: string): boolean {
    for (const run of this.runs.values()) if (run.namespaceId === namespaceId) return true;
    return false;
  }

  /** The namespaces this node's runs serve (what its presence tells the other nodes). */
  localNamespaces(): string[] {
    return [...new Set([...this.runs.values()].map((r) => r.namespaceId))];
  }

  /** Node `nodeId` said which namespaces its runs serve. */
  setRemote(nodeId: string, namespaceIds: readonly string[]): void {
    if (namespaceIds.length === 0) this.remote.delete(nodeId);
    else this.remote.set(nodeId, new Set(namespaceIds));
  }

  /** Node `nodeId` is no longer heard from: nothing is forwarded to it, and what waits on it fails now. */
  dropRemote(nodeId: string): void {
    this.remote.delete(nodeId);
    for (const [id, f] of this.forwarded) {
      if (f.nodeId !== nodeId) continue;
      this.forwarded.delete(id);
      f.reject(
        new AppError(
          "UNAVAILABLE",
          "the server node holding the run went away before it answered; the request may or may not have been sent",
        ),
      );
    }
  }

  private remoteNodeFor(namespaceId: string): string | null {
    if (!this.deps.calls) return null;
    for (const [nodeId, namespaces] of this.remote) if (namespaces.has(namespaceId)) return nodeId;
    return null;
  }

  /** The run for an event of `service`: one of that service, else any of the namespace; null when none. */
  private pick(namespaceId: string, service: string): [object, ReplayRun] | null {
    let any: [object, ReplayRun] | null = null;
    for (const entry of this.runs) {
      if (entry[1].namespaceId !== namespaceId) continue;
      if (entry[1].service === service) return entry;
      any ??= entry;
    }
    return any;
  }

  /**
   * Sends the order to a run of the namespace and waits for its answer (or the timeout): a run connected here, else
   * through the node of the cluster that holds one.
   */
  send(namespaceId: string, service: string, order: Omit<ReplayOrder, "type" | "id">): Promise<ReplayAnswer> {
    if (this.hasLocal(namespaceId)) return this.sendLocal(namespaceId, service, order);
    const nodeId = this.remoteNodeFor(namespaceId);
    if (nodeId) return this.forward(nodeId, namespaceId, service, order);
    return Promise.reject(new AppError("CONFLICT", noReplayRunText));
  }

  /** Sends the order to a run of the namespace connected to this node only. */
  sendLocal(namespaceId: string, service: string, order: Omit<ReplayOrder, "type" | "id">): Promise<ReplayAnswer> {
    const picked = this.pick(namespaceId, service);
    if (!picked) return Promise.reject(new AppError("CONFLICT", noReplayRunText));
    if (this.pending.size >= replayLimits.maxPending) return Promise.reject(tooMany());
    const [runKey, run] = picked;
    const id = randomUUID();
    return new Promise<ReplayAnswer>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new AppError("UNAVAILABLE", `the run did not answer within ${replayLimits.serverTimeoutMs / 1000} s`));
      }, replayLimits.serverTimeoutMs);
      this.pending.set(id, { runKey, resolve, reject, timer });
      run.send({ type: "replay", id, ...order });
    });
  }

  private forward(nodeId: string, namespaceId: string, service: string, order: Omit<ReplayOrder, "type" | "id">): Promise<ReplayAnswer> {
    const calls = this.deps.calls;
    if (!calls) return Promise.reject(new AppError("CONFLICT", noReplayRunText));
    if (this.forwarded.size >= replayLimits.maxForwarded) return Promise.reject(tooMany());
    const id = randomUUID();
    return new Promise<ReplayAnswer>((resolve, reject) => {
      this.forwarded.set(id, { nodeId, reject });
      const timeout = {
        ms: forwardTimeoutMs,
        message: `the server node holding the run did not answer within ${forwardTimeoutMs / 1000} s; the request may or may not have been sent`,
      };
      calls.request(nodeId, "replay", { namespaceId, service, ...order }, timeout).then(
        (answer) => {
          if (this.forwarded.delete(id)) settle(answer, id, resolve, reject);
        },
        (err: unknown) => {
          if (this.forwarded.delete(id)) reject(new AppError("UNAVAILABLE", `the server node holding the run: ${errorMessage(err)}`));
        },
      );
    });
  }

  /** An answer from `key`'s socket; one for an order it was not sent, or one already answered, is ignored. */
  answered(key: object, answer: ReplayAnswer): void {
    const p = this.pending.get(answer.id);
    if (!p || p.runKey !== key) return;
    this.pending.delete(answer.id);
    clearTimeout(p.timer);
    p.resolve(answer);
  }
}

function tooMany(): AppError {
  return new AppError("RATE_LIMITED", "too many requests are being resent right now; try again in a moment");
}

function settle(answer: ForwardedReplayAnswer, id: string, resolve: (a: ReplayAnswer) => void, reject: (err: Error) => void): void {
  if ("refused" in answer) reject(new AppError(answer.refused, answer.error));
  else resolve({ type: "replayed", id, ...answer });
}
