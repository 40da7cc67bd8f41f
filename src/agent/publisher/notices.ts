export type NoticeKind = "rate-limited" | "store-dropped" | "refused" | "disconnected" | "reconnected" | "expired" | "join-failed";

/** A kind of notice is told at most once in this long: a flood of refusals is one line for the user, not thousands. */
const noticeEveryMs = 5000;

/** What the user should know (events refused or rate-limited, connection lost or back), through the caller's onNotice. */
export class Notices {
  private readonly last = new Map<NoticeKind, number>();

  constructor(
    private readonly onNotice: ((kind: NoticeKind, message: string) => void) | undefined,
    private readonly now: () => number = Date.now,
  ) {}

  tell(kind: NoticeKind, message: string): void {
    const now = this.now();
    if ((this.last.get(kind) ?? 0) + noticeEveryMs > now) return;
    this.last.set(kind, now);
    try {
      this.onNotice?.(kind, message);
    } catch {
      // A notice is best effort.
    }
  }
}
