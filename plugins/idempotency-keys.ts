import type { Db, Sql } from '../db/client'
import { errors } from '../lib/errors'
import { KEY_LIFETIME_SECONDS, openAnswer, sealAnswer, type KeyPair, type StoredAnswer } from '../lib/idempotency'
import { claimKey, findKey, forgetKey, lockKey, touchKey, type KeptAnswer, type KeyedRequest, type KeyRow } from '../sql/idempotency-keys'

/** A key's first answer, and the family its request acted in (null for a route without a family scope). */
export interface Held {
  answer: StoredAnswer
  familyId: number | null
}

/**
 * The claims of keys and their kept answers: an answer is sealed to its
 * user and key, so that a row read back under another binding, or sealed
 * with a secret no longer known, is never answered. A key is claimed on its
 * own by a row that commits at once, or inside a transaction that holds it
 * (a batch's) by a lock taken there.
 */
export function keyClaims (sql: Sql, keys: KeyPair[], staleAfter: number) {
  const binding = (keyed: KeyedRequest): string => `${keyed.userId}:${keyed.key}`

  /** A run's answer as it is kept: sealed, with the family its request acted in. */
  function sealed (run: { keyed: KeyedRequest, familyId: number | null }, answer: StoredAnswer): KeptAnswer {
    return { status: answer.status, answer: sealAnswer(keys[0].seal, binding(run.keyed), answer), familyId: run.familyId }
  }

  /** What a repeat gets from a key's row: its first answer, or a refusal; `run` when the row's request died. */
  function verdict (row: KeyRow, keyed: KeyedRequest, prints: string[]): Held | Error | 'run' | 'unreadable' {
    if (row.method !== keyed.method || row.path !== keyed.path || !prints.includes(row.fingerprint)) return new errors.idempotencyKeyReused()
    if (row.state === 'running') return row.stale ? 'run' : new errors.idempotencyKeyInFlight()
    const answer = openAnswer(keys, binding(keyed), row.status as number, row.answer as Buffer)
    return answer === null ? 'unreadable' : { answer, familyId: row.familyId }
  }

  /** Claims a key on its own: the claim, or what a repeat gets. */
  async function claimApart (keyed: KeyedRequest, prints: string[]): Promise<string | Held | Error> {
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const claim = await claimKey(sql, keyed, KEY_LIFETIME_SECONDS, staleAfter)
      if (claim !== null) return claim
      const row = await findKey(sql, keyed.userId, keyed.key, staleAfter)
      // Gone meanwhile: expired, or given up by its run.
      if (row === undefined) continue
      const found = verdict(row, keyed, prints)
      // An answer sealed with a secret no longer known: the key starts afresh.
      if (found === 'unreadable') await forgetKey(sql, keyed.userId, keyed.key)
      else if (found !== 'run') return found
    }
    return new errors.idempotencyKeyInFlight()
  }

  /** Takes a key inside a transaction that holds it until it ends: `run`, or what a repeat gets. */
  async function claimHeld (db: Db, keyed: KeyedRequest, prints: string[]): Promise<Held | Error | 'run'> {
    const locked = await lockKey(db, keyed.userId, keyed.key, staleAfter)
    const found = locked === null ? new errors.idempotencyKeyInFlight() : locked.row === undefined ? 'run' : verdict(locked.row, keyed, prints)
    if (found !== 'unreadable') return found
    await forgetKey(db, keyed.userId, keyed.key)
    return 'run'
  }

  /** A long request shows it is alive, so that its key is not taken over. */
  function heartbeat (keyed: KeyedRequest, claim: string): NodeJS.Timeout {
    const timer = setInterval(() => {
      touchKey(sql, keyed.userId, keyed.key, claim).catch(() => {})
    }, Math.max(1000, Math.floor(staleAfter * 1000 / 3)))
    timer.unref()
    return timer
  }

  return { sealed, claimApart, claimHeld, heartbeat }
}
