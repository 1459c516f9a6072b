import { createHash } from 'node:crypto'

/** The ETag of one family, child or record: its version, in quotes. */
export function versionTag (version: number): string {
  return `"${version}"`
}

/** The part of a read's ETag that names its URL; worked out once per request by whoever needs it more than once. */
export function urlHash (url: string): string {
  return createHash('sha256').update(url).digest('base64url').slice(0, 22)
}

/**
 * The ETag of a read that shows more than one item (a list, the growth of a
 * child, an export): the clock of what it shows, `<epoch>.<seq>`, and a hash
 * of the URL, so that it is the same for the same URL as long as the clock
 * has not moved, whatever instance computes it.
 */
export function clockTag (url: string, clock: string, hash = urlHash(url)): string {
  return `"${clock}.${hash}"`
}

/** The clock an If-None-Match header names for this URL, or null. */
export function clockOfTag (header: string | undefined, url: string, hash = urlHash(url)): string | null {
  if (header === undefined) return null
  const given = tags(header)
  if (given === null) return null
  const suffix = `.${hash}"`
  const found = given.find(({ tag }) => tag.endsWith(suffix))
  return found === undefined ? null : found.tag.slice(1, -suffix.length)
}

const TAG = /^\s*(W\/)?("[^"]*")\s*$/

/** The entity tags of an If-None-Match or If-Match header, or null when it is not a list of them. */
function tags (header: string): Array<{ weak: boolean, tag: string }> | null {
  if (header.trim() === '*') return [{ weak: false, tag: '*' }]
  const found: Array<{ weak: boolean, tag: string }> = []
  for (const part of header.split(',')) {
    const match = TAG.exec(part)
    if (match === null) return null
    found.push({ weak: match[1] !== undefined, tag: match[2] })
  }
  return found
}

/** True when an If-None-Match header names this ETag (weak comparison, as for GET). */
export function noneMatch (header: string | undefined, etag: string): boolean {
  if (header === undefined) return false
  const given = tags(header)
  return given !== null && given.some(({ tag }) => tag === '*' || tag === etag)
}

/**
 * The versions an If-Match header accepts: `null` when there is no header,
 * `'any'` for `*`, `'invalid'` when it is not a list of quoted versions.
 */
export function ifMatchVersions (header: string | undefined): number[] | 'any' | 'invalid' | null {
  if (header === undefined) return null
  const given = tags(header)
  if (given === null) return 'invalid'
  if (given.some(({ tag }) => tag === '*')) return 'any'
  const versions = given.map(({ tag }) => tag.slice(1, -1))
  if (!versions.every(version => /^[1-9]\d{0,9}$/.test(version))) return 'invalid'
  // If-Match compares strongly: a weak tag matches nothing.
  return given.flatMap(({ weak, tag }) => weak ? [] : [Number(tag.slice(1, -1))])
}
