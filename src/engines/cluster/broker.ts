import { RedisClient } from "bun";
import { errorMessage } from "~/lib/errors.ts";
import { log } from "~/lib/logger.ts";

/**
 * The message broker that joins a cluster's server nodes: Redis pub/sub (ADR 0021). Publishing never waits and never
 * queues while Redis is away (a live event that cannot be fanned out now is worth nothing later); what could not be
 * sent is counted. The client reconnects by itself; `onStatus` says when the broker goes and comes back.
 */
export type Broker = {
  publish(channel: string, message: string): void;
  subscribe(channel: string, handler: (message: string) => void): Promise<void>;
  readonly isConnected: boolean;
  /** Messages that could not be published (the broker was unreachable). */
  readonly unsent: number;
  onStatus(listener: (connected: boolean) => void): void;
  close(): void;
};

export async function connectRedisBroker(url: string): Promise<Broker> {
  const options = { autoReconnect: true, enableOfflineQueue: false, maxRetries: 4_294_967_295, connectionTimeout: 5_000 };
  const publisher = new RedisClient(url, options);
  const subscriber = new RedisClient(url, options);
  const listeners: Array<(connected: boolean) => void> = [];
  const subscriptions = new Map<string, (message: string) => void>();
  let unsent = 0;
  let connected = false;
  const setStatus = (next: boolean) => {
    if (next === connected) return;
    connected = next;
    if (next) log.info("broker connected", { url: redacted(url) });
    else log.warn("broker unreachable: live events from other server nodes are paused", { url: redacted(url) });
    for (const l of listeners) l(next);
  };
  let wasDown = false;
  publisher.onconnect = () => setStatus(publisher.connected && subscriber.connected);
  publisher.onclose = () => setStatus(false);
  subscriber.onclose = () => {
    wasDown = true;
    setStatus(false);
  };
  subscriber.onconnect = () => {
    // A reconnected subscriber starts with no subscriptions: take them again.
    if (wasDown) {
      wasDown = false;
      for (const [channel, handler] of subscriptions) {
        subscriber
          .subscribe(channel, (message) => handler(String(message)))
          .catch((err) => log.warn("broker resubscribe failed", { err: errorMessage(err) }));
      }
    }
    setStatus(publisher.connected && subscriber.connected);
  };
  await Promise.all([publisher.connect(), subscriber.connect()]);
  setStatus(true);
  return {
    publish(channel, message) {
      if (!publisher.connected) {
        unsent++;
        return;
      }
      publisher.publish(channel, message).catch((err) => {
        unsent++;
        if (unsent === 1 || unsent % 10_000 === 0) log.warn("broker publish failed", { err: errorMessage(err), unsent });
      });
    },
    async subscribe(channel, handler) {
      subscriptions.set(channel, handler);
      await subscriber.subscribe(channel, (message) => handler(String(message)));
    },
    get isConnected() {
      return connected;
    },
    get unsent() {
      return unsent;
    },
    onStatus(listener) {
      listeners.push(listener);
    },
    close() {
      publisher.close();
      subscriber.close();
    },
  };
}

function redacted(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = "***";
  return u.toString();
}
