import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { errorMessage } from "~/lib/errors.ts";
import {
  decodeBrokerMessage,
  decodeNodeAnswer,
  decodeNodeBody,
  encodeBrokerMessage,
  encodeNodeAnswer,
  encodeNodeBody,
  isNodeCallKind,
  type NodeCallAnswer,
  type NodeCallBody,
  type NodeCallKind,
  nodeChannel,
} from "~/lib/protocol/cluster.ts";
import type { Broker } from "./broker.ts";
import { RefusedMessages } from "./refused-messages.ts";

/** How long a call to another node (a worker's query through the node holding its socket) may take. */
const callTimeoutMs = 35_000;

type Waiting = {
  kind: NodeCallKind;
  resolve: (answer: string) => void;
  reject: (err: Error) => void;
  timer: ReturnType<typeof setTimeout>;
};

/**
 * This node's name in the cluster, and its calls to one other node (lib/protocol/cluster.ts `nodeCalls`): a call goes
 * to the asked node's own broker channel and its answer back to the caller's. Made before the engines that call or
 * answer (the worker registry, open tunnels, the cluster node), which register what they answer in their constructors.
 * Bodies and answers are checked against their call's schema where they arrive; what fails is refused and counted.
 */
export class NodeCalls {
  readonly nodeId: string;
  /** What other nodes sent that was refused at the edge (every broker channel, not only calls). */
  readonly refused = new RefusedMessages();
  private readonly handlers = new Map<NodeCallKind, (body: string) => Promise<string>>();
  private readonly waiting = new Map<string, Waiting>();
  private seq = 0;

  constructor(
    private readonly deps: {
      broker: Broker;
      /** Default: the host name and a random suffix. */
      nodeId?: string;
    },
  ) {
    this.nodeId = deps.nodeId ?? `${hostname()}-${randomUUID().slice(0, 8)}`;
  }

  async start(): Promise<void> {
    await this.deps.broker.subscribe(nodeChannel(this.nodeId), (text) => this.onMessage(text));
  }

  stop(): void {
    for (const w of this.waiting.values()) {
      clearTimeout(w.timer);
      w.reject(new Error("the server is shutting down"));
    }
    this.waiting.clear();
  }

  /** What this node answers when another asks `kind` (a body that fails the call's schema is answered with an error). */
  handle<K extends NodeCallKind>(kind: K, handler: (body: NodeCallBody<K>) => Promise<NodeCallAnswer<K>>): void {
    this.handlers.set(kind, async (text) => {
      const body = decodeNodeBody(kind, text);
      if (!body.ok) {
        this.refused.count(`call:${kind}`, body.error);
        throw new Error(`a malformed ${kind} call (${body.error})`);
      }
      return encodeNodeAnswer(kind, await handler(body.value));
    });
  }

  /**
   * Asks node `nodeId`; rejects when the broker is away, the node does not answer within `timeout` (its ms and what the
   * rejection says), or answers amiss.
   */
  request<K extends NodeCallKind>(
    nodeId: string,
    kind: K,
    body: NodeCallBody<K>,
    timeout: { ms: number; message: string } = { ms: callTimeoutMs, message: "the server node holding it did not answer in time" },
  ): Promise<NodeCallAnswer<K>> {
    const { broker } = this.deps;
    if (!broker.isConnected) return Promise.reject(new Error("the broker is unreachable"));
    const id = `${this.nodeId}:${++this.seq}`;
    const answered = new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(timeout.message));
      }, timeout.ms);
      this.waiting.set(id, { kind, resolve, reject, timer });
      broker.publish(nodeChannel(nodeId), encodeBrokerMessage("node", { id, from: this.nodeId, kind, body: encodeNodeBody(kind, body) }));
    });
    return answered.then((text) => {
      const answer = decodeNodeAnswer(kind, text);
      if (answer.ok) return answer.value;
      this.refused.count(`answer:${kind}`, answer.error);
      throw new Error(`node ${nodeId} answered ${kind} amiss (${answer.error})`);
    });
  }

  private onMessage(text: string): void {
    const decoded = decodeBrokerMessage("node", text);
    if (!decoded.ok) {
      this.refused.count("node", decoded.error);
      return;
    }
    const message = decoded.value;
    if (message.body === undefined) {
      const w = this.waiting.get(message.id);
      if (!w) return;
      this.waiting.delete(message.id);
      clearTimeout(w.timer);
      if (message.error !== undefined) w.reject(new Error(message.error));
      else w.resolve(message.answer ?? "");
      return;
    }
    const kind = message.kind;
    const reply = (fields: { answer: string } | { error: string }) =>
      this.deps.broker.publish(
        nodeChannel(message.from),
        encodeBrokerMessage("node", { id: message.id, from: this.nodeId, kind, ...fields }),
      );
    const handler = isNodeCallKind(kind) ? this.handlers.get(kind) : undefined;
    if (!handler) {
      reply({ error: `no handler for ${kind}` });
      return;
    }
    handler(message.body).then(
      (answer) => reply({ answer }),
      (err) => reply({ error: errorMessage(err).slice(0, 1000) }),
    );
  }
}
