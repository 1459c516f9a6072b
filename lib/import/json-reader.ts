import type { Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream'
import { parser } from 'stream-json'

/** What is wrong with a JSON document: its syntax, or a value past a limit. The message says what. */
export class JsonProblem extends Error {}

export interface JsonLimits {
  /** Characters of a string or a key. */
  maxText: number
  /** Characters of a number as written. */
  maxNumber: number
  /** Objects and arrays nested in a value read or skipped. */
  maxDepth: number
  /** Keys of one object. */
  maxKeys: number
  /** Characters of one value read whole (its texts, keys and numbers together). */
  maxValue: number
}

interface Token {
  name: string
  value?: string
}

export type JsonKind = 'object' | 'array' | 'string' | 'number' | 'boolean' | 'null'

const KINDS: Record<string, JsonKind> = {
  startObject: 'object',
  startArray: 'array',
  startString: 'string',
  startNumber: 'number',
  trueValue: 'boolean',
  falseValue: 'boolean',
  nullValue: 'null'
}

const WAKE = ['readable', 'end', 'close', 'error']

type Container = { array: unknown[] } | { object: Record<string, unknown>, key: string | null, keys: number }

/**
 * Builds one value from its tokens, within the limits: `feed` answers true
 * once the value is whole. `keep: false` only checks the limits (a value
 * skipped), keeping nothing.
 */
class ValueBuilder {
  private readonly stack: Container[] = []
  private text: string | null = null
  private budget: number
  result: unknown

  constructor (private readonly limits: JsonLimits, private readonly keep: boolean) {
    this.budget = limits.maxValue
  }

  private spend (size: number): void {
    if (!this.keep) return
    this.budget -= size
    if (this.budget < 0) throw new JsonProblem(`has a value larger than ${this.limits.maxValue} characters`)
  }

  private deliver (value: unknown): boolean {
    const top = this.stack[this.stack.length - 1]
    if (top === undefined) {
      this.result = value
      return true
    }
    if (!this.keep) return false
    if ('array' in top) {
      this.spend(1)
      top.array.push(value)
    } else {
      // A key such as __proto__ is kept as data, never as the object's prototype.
      Object.defineProperty(top.object, top.key as string, { value, enumerable: true, writable: true, configurable: true })
    }
    return false
  }

  private open (container: Container): void {
    if (this.stack.length >= this.limits.maxDepth) throw new JsonProblem(`nests values more than ${this.limits.maxDepth} deep`)
    this.stack.push(container)
  }

  feed (token: Token): boolean {
    switch (token.name) {
      case 'startObject':
        this.open({ object: {}, key: null, keys: 0 })
        return false
      case 'startArray':
        this.open({ array: [] })
        return false
      case 'endObject':
      case 'endArray': {
        const top = this.stack.pop() as Container
        return this.deliver('array' in top ? top.array : top.object)
      }
      case 'startKey':
      case 'startString':
      case 'startNumber':
        this.text = ''
        return false
      case 'stringChunk':
      case 'numberChunk': {
        this.text += token.value as string
        const number = token.name === 'numberChunk'
        const limit = number ? this.limits.maxNumber : this.limits.maxText
        if ((this.text as string).length > limit) throw new JsonProblem(`has a ${number ? 'number' : 'text'} longer than ${limit} characters`)
        return false
      }
      case 'endKey': {
        const top = this.stack[this.stack.length - 1] as { key: string | null, keys: number }
        top.keys += 1
        if (this.keep && top.keys > this.limits.maxKeys) throw new JsonProblem(`has an object of more than ${this.limits.maxKeys} keys`)
        this.spend((this.text as string).length + 1)
        top.key = this.text
        return false
      }
      case 'endString': {
        const text = this.text as string
        this.spend(text.length)
        return this.deliver(text)
      }
      case 'endNumber': {
        const written = this.text as string
        this.spend(written.length)
        return this.deliver(Number(written))
      }
      case 'trueValue':
      case 'falseValue':
      case 'nullValue':
        this.spend(1)
        return this.deliver(token.name === 'trueValue' ? true : token.name === 'falseValue' ? false : null)
      default:
        throw new JsonProblem('has a value missing')
    }
  }
}

/**
 * A JSON document read token by token as its bytes arrive (stream-json's
 * parser, every text and number streamed in chunks), never held whole: the
 * caller walks the document's shape, reads whole only the small values it
 * needs (a record), skips the rest, and refuses a wrong shape at its first
 * token. Every text, number, object and value read is bounded by `limits`,
 * so memory is bounded by one value, whatever the document's size. The
 * parser works a chunk of input at a time and the tokens it has made are
 * taken without waiting; the event loop is free between chunks.
 */
export class JsonReader {
  private readonly tokens: Transform
  private peeked: Token | null = null
  /**
   * What stopped the tokens first: a failure of the bytes' source (a damaged
   * entry, a disk) is thrown as it is, one of the parser means the document
   * is not JSON. Each stream's failure reaches the other one after it.
   */
  private failure: { of: 'source' | 'parser', error: Error } | null = null
  private ended = false

  constructor (source: Readable, private readonly limits: JsonLimits) {
    this.tokens = parser({ packValues: false, streamValues: true })
    source.once('error', error => { this.failure ??= { of: 'source', error } })
    this.tokens.once('error', error => { this.failure ??= { of: 'parser', error } })
    this.tokens.once('end', () => { this.ended = true })
    pipeline(source, this.tokens, () => {})
  }

  /** Stops reading: the source is no longer consumed. */
  close (): void {
    this.tokens.destroy()
  }

  /** Throws what stopped the tokens, if anything did. */
  private check (): void {
    if (this.failure === null) return
    if (this.failure.of === 'source') throw this.failure.error
    throw new JsonProblem(`is not valid JSON (${this.failure.error.message})`)
  }

  /** The next token if the parser has made it, without waiting. */
  private poll (): Token | null {
    const token = this.peeked
    if (token === null) return this.tokens.read() as Token | null
    this.peeked = null
    return token
  }

  /** Waits until the parser has more tokens; fails when the document ended or failed instead. */
  private async more (): Promise<void> {
    this.check()
    if (this.ended || this.tokens.destroyed) throw new JsonProblem('ends before its last value')
    await new Promise<void>(resolve => {
      const done = (): void => {
        for (const event of WAKE) this.tokens.off(event, done)
        resolve()
      }
      for (const event of WAKE) this.tokens.on(event, done)
    })
  }

  private async next (): Promise<Token> {
    for (;;) {
      const token = this.poll()
      if (token !== null) return token
      await this.more()
    }
  }

  private async peek (): Promise<Token> {
    this.peeked ??= await this.next()
    return this.peeked
  }

  /** Feeds tokens to a builder until its value is whole, waiting only when the parser has none ready. */
  private async build (builder: ValueBuilder): Promise<unknown> {
    for (;;) {
      for (let token = this.poll(); token !== null; token = this.poll()) {
        if (builder.feed(token)) return builder.result
      }
      await this.more()
    }
  }

  /** The kind of the next value, without reading it. */
  async kind (): Promise<JsonKind> {
    const kind = KINDS[(await this.peek()).name]
    if (kind === undefined) throw new JsonProblem('has a value missing')
    return kind
  }

  /** Reads the opening of an object; false when the next value is another kind (left unread). */
  async openObject (): Promise<boolean> {
    if ((await this.peek()).name !== 'startObject') return false
    this.peeked = null
    return true
  }

  /** Reads the opening of an array; false when the next value is another kind (left unread). */
  async openArray (): Promise<boolean> {
    if ((await this.peek()).name !== 'startArray') return false
    this.peeked = null
    return true
  }

  /** The next key of an open object, or null once it closes. */
  async key (): Promise<string | null> {
    const token = await this.next()
    if (token.name === 'endObject') return null
    if (token.name !== 'startKey') throw new JsonProblem('has an object without a key')
    let key = ''
    for (;;) {
      const next = this.poll() ?? await this.next()
      if (next.name === 'endKey') return key
      key += next.value as string
      if (key.length > this.limits.maxText) throw new JsonProblem(`has a text longer than ${this.limits.maxText} characters`)
    }
  }

  /** Whether an open array has another item; false once it closes (the closing is read). */
  async item (): Promise<boolean> {
    if ((await this.peek()).name !== 'endArray') return true
    this.peeked = null
    return false
  }

  /** The next value, read whole within the limits. */
  value (): Promise<unknown> {
    return this.build(new ValueBuilder(this.limits, true))
  }

  /** Passes over the next value without keeping it; its texts and nesting are bounded all the same. */
  async skip (): Promise<void> {
    await this.build(new ValueBuilder(this.limits, false))
  }

  /** Checks that the document ends after its value. */
  async end (): Promise<void> {
    if (this.peeked !== null) throw new JsonProblem('has more after its value')
    for (;;) {
      if ((this.tokens.read() as Token | null) !== null) throw new JsonProblem('has more after its value')
      this.check()
      if (this.ended) return
      await this.more()
    }
  }
}
