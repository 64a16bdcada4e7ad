import type { Redis } from 'ioredis';
import { defaultEventLogTtlMs, type EventFollower, type LoggedEvent, type ResponseEventLog } from './response-event-log.js';

// The scaled-out replay log: one Redis stream per response (`<prefix>:resp:<id>:events`), so any
// ingress can replay and follow a response that another ingress is relaying. Each entry holds one
// event (fields s, t, d) or the end marker (field end). The stream expires `ttlMs` after its last
// write. A follower blocks on XREAD with a connection of its own, since a blocked connection can
// serve nobody else.

const blockMs = 1000;

export class RedisResponseEventLog implements ResponseEventLog {
  private readonly followers = new Set<Redis>();

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly ttlMs = defaultEventLogTtlMs,
  ) {}

  private key(responseId: string): string {
    return `${this.prefix}:resp:${responseId}:events`;
  }

  async append(responseId: string, events: LoggedEvent[]): Promise<void> {
    if (events.length === 0) return;
    const key = this.key(responseId);
    const batch = this.redis.multi();
    for (const event of events) batch.xadd(key, '*', 's', String(event.seq), 't', event.type, 'd', event.data);
    batch.pexpire(key, this.ttlMs);
    await batch.exec();
  }

  async end(responseId: string): Promise<void> {
    const key = this.key(responseId);
    await this.redis.multi().xadd(key, '*', 'end', '1').pexpire(key, this.ttlMs).exec();
  }

  follow(responseId: string, after: number, follower: EventFollower): () => void {
    const connection = this.redis.duplicate({ maxRetriesPerRequest: 1, enableOfflineQueue: true });
    connection.on('error', () => undefined);
    this.followers.add(connection);
    let stopped = false;
    const stop = () => {
      if (stopped) return;
      stopped = true;
      this.followers.delete(connection);
      connection.disconnect();
    };
    const key = this.key(responseId);
    const run = async () => {
      if ((await connection.exists(key)) === 0) return;
      let lastId = '0';
      while (!stopped) {
        const reply = (await connection.xread('COUNT', 500, 'BLOCK', blockMs, 'STREAMS', key, lastId)) as Array<[string, Array<[string, string[]]>]> | null;
        if (!reply) {
          // Expired while we waited: nothing more will come.
          if ((await connection.exists(key)) === 0) return;
          continue;
        }
        const events: LoggedEvent[] = [];
        let ended = false;
        for (const [id, fields] of reply[0]![1]) {
          lastId = id;
          const values = fieldsOf(fields);
          if (values.end !== undefined) {
            ended = true;
            break;
          }
          const seq = Number(values.s);
          if (seq > after) events.push({ seq, type: values.t ?? '', data: values.d ?? '' });
        }
        if (events.length > 0 && !stopped) follower.onEvents(events);
        if (ended) return;
      }
    };
    run()
      .catch(() => undefined)
      .finally(() => {
        const wasStopped = stopped;
        stop();
        if (!wasStopped) follower.onEnd();
      });
    return stop;
  }

  async close(): Promise<void> {
    for (const connection of this.followers) connection.disconnect();
    this.followers.clear();
  }
}

function fieldsOf(fields: string[]): Record<string, string> {
  const values: Record<string, string> = {};
  for (let index = 0; index + 1 < fields.length; index += 2) values[fields[index]!] = fields[index + 1]!;
  return values;
}
