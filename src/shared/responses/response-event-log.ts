// The replay log of a background response's stream: every event the client could have seen, in
// order, kept for a bounded time so that `GET /v1/responses/{id}?stream=true&starting_after=N`
// can replay what came after event N and then follow the stream live, from any ingress. The
// memory log serves the embedded default, the Redis log (a Redis stream per response) the scaled-out
// deployment; test/response-event-log-conformance.test.ts holds both to the same behaviour.

export interface LoggedEvent {
  /** The event's sequence_number: 0, 1, 2... without gaps. */
  seq: number;
  /** The event type, for the SSE `event:` line. */
  type: string;
  /** The event as JSON text, as sent to clients. */
  data: string;
}

export interface EventFollower {
  onEvents(events: LoggedEvent[]): void;
  /** The log ended (the response is over), or it does not exist (expired or never written). */
  onEnd(): void;
}

export interface ResponseEventLog {
  /** Appends events; callers append in sequence order and never concurrently for one response. */
  append(responseId: string, events: LoggedEvent[]): Promise<void>;
  /** Marks the stream over: followers get onEnd after the last event. Appends after it are ignored. */
  end(responseId: string): Promise<void>;
  /** Delivers the events after `after` (-1: all), then new ones as they are appended, until the end. Returns a stop function. */
  follow(responseId: string, after: number, follower: EventFollower): () => void;
  close(): Promise<void>;
}

/** How long a log is kept after its last append (OpenAI keeps background streams about 10 minutes). */
export const defaultEventLogTtlMs = 10 * 60 * 1000;
