import { defaultEventLogTtlMs, type EventFollower, type LoggedEvent, type ResponseEventLog } from './response-event-log.js';

// The embedded default's replay log: arrays in this process, dropped `ttlMs` after their last write.

interface Entry {
  events: LoggedEvent[];
  ended: boolean;
  followers: Set<EventFollower>;
  timer?: NodeJS.Timeout;
}

export class MemoryResponseEventLog implements ResponseEventLog {
  private readonly logs = new Map<string, Entry>();

  constructor(private readonly ttlMs = defaultEventLogTtlMs) {}

  async append(responseId: string, events: LoggedEvent[]): Promise<void> {
    let entry = this.logs.get(responseId);
    if (!entry) {
      entry = { events: [], ended: false, followers: new Set() };
      this.logs.set(responseId, entry);
    }
    if (entry.ended) return;
    entry.events.push(...events);
    this.expireLater(responseId, entry);
    for (const follower of entry.followers) follower.onEvents(events);
  }

  async end(responseId: string): Promise<void> {
    const entry = this.logs.get(responseId);
    if (!entry || entry.ended) return;
    entry.ended = true;
    this.expireLater(responseId, entry);
    for (const follower of entry.followers) follower.onEnd();
    entry.followers.clear();
  }

  follow(responseId: string, after: number, follower: EventFollower): () => void {
    let entry: Entry | undefined;
    let stopped = false;
    // Delivered on the next turn, as the Redis log does: callers may finish setting up first.
    queueMicrotask(() => {
      if (stopped) return;
      entry = this.logs.get(responseId);
      if (!entry) return follower.onEnd();
      const backlog = entry.events.filter((event) => event.seq > after);
      if (backlog.length > 0) follower.onEvents(backlog);
      if (entry.ended) follower.onEnd();
      else entry.followers.add(follower);
    });
    return () => {
      stopped = true;
      entry?.followers.delete(follower);
    };
  }

  async close(): Promise<void> {
    for (const entry of this.logs.values()) clearTimeout(entry.timer);
    this.logs.clear();
  }

  private expireLater(responseId: string, entry: Entry): void {
    clearTimeout(entry.timer);
    entry.timer = setTimeout(() => {
      for (const follower of entry.followers) follower.onEnd();
      this.logs.delete(responseId);
    }, this.ttlMs);
    entry.timer.unref();
  }
}
