/**
 * A least-recently-used map bounded by the bytes of its values: adding past
 * the bound drops the entries used longest ago. A value larger than a tenth
 * of the bound is not kept, so that one large answer cannot empty the cache.
 */
export class ByteLru<V extends { bytes: number }> {
  private readonly entries = new Map<string, V>()
  private used = 0

  constructor (readonly maxBytes: number) {}

  get (key: string): V | undefined {
    const value = this.entries.get(key)
    if (value === undefined) return undefined
    // A Map iterates in insertion order: moving the entry to the end marks it used last.
    this.entries.delete(key)
    this.entries.set(key, value)
    return value
  }

  set (key: string, value: V): void {
    const old = this.entries.get(key)
    if (old !== undefined) {
      this.entries.delete(key)
      this.used -= old.bytes
    }
    if (value.bytes > this.maxBytes / 10) return
    this.entries.set(key, value)
    this.used += value.bytes
    for (const [oldest, entry] of this.entries) {
      if (this.used <= this.maxBytes) break
      this.entries.delete(oldest)
      this.used -= entry.bytes
    }
  }

  delete (key: string): void {
    const old = this.entries.get(key)
    if (old === undefined) return
    this.entries.delete(key)
    this.used -= old.bytes
  }

  /** The bytes of the values kept. */
  get bytes (): number {
    return this.used
  }

  get size (): number {
    return this.entries.size
  }
}
