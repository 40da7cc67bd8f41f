import { errorMessage } from "~/lib/errors.ts";
import { log } from "~/lib/server/logger.ts";

/**
 * Holds the pages' reports (event_log) within their size budget: every time this node has stored a sixteenth of the
 * budget since its last trim (and with its first report), it trims the table to the budget, oldest reports first. The
 * table may pass the budget by a sixteenth per node between trims; the hourly metadata job trims too.
 */
export class EventLogBudget {
  private sinceTrim = Number.POSITIVE_INFINITY;
  private trimming: Promise<void> | null = null;

  constructor(
    private readonly deps: {
      maxBytes: number;
      /** Deletes the oldest reports beyond the budget (trimEventLog); returns how many. */
      trim: () => Promise<number>;
    },
  ) {}

  /** A report of `bytes` was stored. */
  stored(bytes: number): void {
    this.sinceTrim += bytes;
    if (this.trimming || this.sinceTrim < this.deps.maxBytes / 16) return;
    this.sinceTrim = 0;
    this.trimming = this.deps
      .trim()
      .then(
        (deleted) => {
          if (deleted > 0) log.info("client reports over their size budget: oldest deleted", { deleted, maxBytes: this.deps.maxBytes });
        },
        (err) => log.warn("could not trim client reports to their size budget", { err: errorMessage(err) }),
      )
      .finally(() => {
        this.trimming = null;
      });
  }

  /** Waits for a trim in progress (tests, shutdown). */
  async settled(): Promise<void> {
    await this.trimming;
  }
}
