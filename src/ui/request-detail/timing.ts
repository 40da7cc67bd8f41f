import type { TracedEvent } from "~/lib/protocol/event.ts";

export type TimingStep = {
  label: string;
  /** Microseconds from the start of the exchange. */
  start: number;
  duration: number;
  isCulprit: boolean;
};

/**
 * The latency breakdown of one exchange as consecutive steps (-1 timings do not apply and are left out).
 * Outbound: connect, TLS handshake (decrypted HTTPS), send, wait, receive. Inbound: request receive, processing, response send.
 * The slowest step is flagged as the culprit.
 */
export function timingSteps(event: TracedEvent): TimingStep[] {
  const parts: Array<[string, number]> = event.http_is_outgoing
    ? [
        ["connect", event.timing_connect],
        ["TLS handshake", event.timing_tls ?? -1],
        ["send", event.timing_send],
        ["wait", event.timing_wait],
        ["receive", event.timing_receive],
      ]
    : [
        ["request receive", event.timing_send],
        ["processing", event.timing_wait],
        ["response send", event.timing_receive],
      ];
  const steps: TimingStep[] = [];
  let at = 0;
  for (const [label, duration] of parts) {
    if (!Number.isFinite(duration) || duration < 0) continue;
    steps.push({ label, start: at, duration, isCulprit: false });
    at += duration;
  }
  let culprit: TimingStep | undefined;
  for (const step of steps) if (step.duration > 0 && (!culprit || step.duration > culprit.duration)) culprit = step;
  if (culprit) culprit.isCulprit = true;
  return steps;
}
