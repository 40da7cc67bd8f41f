import { tracedEvent } from "../support/event-factory.ts";

/** A plausible inbound HTTP event; override what the test is about. */
export const makeEvent = tracedEvent;
