/**
 * Sessions and turns belong to a user: the user of a session's first turn owns the session, and
 * a turn belongs to the user it was recorded under. With API keys on, a chat into another user's
 * session and feedback on another user's turn or session are refused (403); feedback on a turn
 * the gateway does not know is refused (404) whatever the auth.
 *
 * What the gateway knows: the turns it served since it started and, with session sharing on
 * (the default), every instance's turns of the last `GATEWAY_SESSION_SHARE_WINDOW_MS` read
 * back from the turns topic, up to `capacity` of each (least recently used forgotten first).
 */
import type { Turn } from '../schemas/index.ts';
import { ErrorCodes, TurnstreamError } from '../core/index.ts';
import type { Caller } from './auth.ts';
import { Lru } from './lru.ts';

export interface KnownTurn {
  sessionId: string;
  userId: string | null;
}

export class Ownership {
  private readonly turns: Lru<string, KnownTurn>;
  private readonly sessions: Lru<string, string | null>;

  /** @param capacity most turns (and sessions) remembered. @default 100000 */
  constructor(capacity = 100_000) {
    this.turns = new Lru(capacity);
    this.sessions = new Lru(capacity);
  }

  /** Remembers a turn, and its user as the session's owner if the session is new. */
  record(turn: Pick<Turn, 'turnId' | 'sessionId' | 'userId'>): void {
    this.turns.set(turn.turnId, { sessionId: turn.sessionId, userId: turn.userId });
    this.claim(turn.sessionId, turn.userId);
  }

  has(turnId: string): boolean {
    return this.turns.has(turnId);
  }

  /** Makes `userId` the owner of `sessionId` unless it has one already. */
  claim(sessionId: string, userId: string | null): void {
    if (this.sessions.get(sessionId) === undefined) this.sessions.set(sessionId, userId);
  }

  turn(turnId: string): KnownTurn | undefined {
    return this.turns.get(turnId);
  }

  /** The session's owner: a user id, null (a session of no user), or undefined (unknown here). */
  owner(sessionId: string): string | null | undefined {
    return this.sessions.get(sessionId);
  }

  /**
   * Refuses (403) a call of `userId` into a session another user owns, when identity is
   * enforced; claims a session nobody owns yet.
   */
  enter(caller: Caller, sessionId: string, userId: string | null, param: string): void {
    const owner = this.owner(sessionId);
    if (owner === undefined) return this.claim(sessionId, userId);
    if (caller.enforced && owner !== userId) throw forbidden(`session ${JSON.stringify(sessionId)} belongs to another user`, param);
  }
}

export const forbidden = (message: string, param?: string): TurnstreamError =>
  new TurnstreamError(ErrorCodes.FORBIDDEN, message, { param });
