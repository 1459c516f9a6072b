/** Latin letters that no Unicode decomposition turns into ASCII. */
const LETTERS: Record<string, string> = { ø: 'o', æ: 'ae', œ: 'oe', ß: 'ss', đ: 'd', ð: 'd', ł: 'l', þ: 'th', ı: 'i', ħ: 'h' }

/** A name as lower-case ASCII words joined by dashes, or the fallback when nothing is left. */
export function slug (name: string, fallback: string): string {
  const words = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[\u00f8\u00e6\u0153\u00df\u0111\u00f0\u0142\u00fe\u0131\u0127]/g, letter => LETTERS[letter])
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, 60)
    .replace(/^-+|-+$/g, '')
  return words === '' ? fallback : words
}

/** RFC 8187 encoding: everything but its attr-chars percent-encoded as UTF-8. */
export function extValue (text: string): string {
  return encodeURIComponent(text).replace(/['()*]/g, char => `%${char.charCodeAt(0).toString(16).toUpperCase()}`)
}

/**
 * `Content-Disposition: attachment` for a download named after `name` and a
 * date: a safe ASCII `filename`, and the name as written in `filename*`.
 */
export function attachmentDisposition (name: string, fallback: string, date: string, extension: string): string {
  const ascii = `${slug(name, fallback)}-${date}${extension}`
  const written = name.replace(/[\p{Cc}/\\"]/gu, '').trim().replace(/\s+/g, '-')
  const utf8 = `${written === '' ? fallback : written}-${date}${extension}`
  return utf8 === ascii
    ? `attachment; filename="${ascii}"`
    : `attachment; filename="${ascii}"; filename*=UTF-8''${extValue(utf8)}`
}

/**
 * `Content-Disposition: inline` for a stored file shown under the name it was
 * uploaded with: a safe ASCII `filename` and the name as written in `filename*`.
 */
export function inlineDisposition (fileName: string): string {
  const dot = fileName.lastIndexOf('.')
  const extension = dot > 0 ? fileName.slice(dot).toLowerCase().replace(/[^.a-z0-9]/g, '') : ''
  const ascii = `${slug(dot > 0 ? fileName.slice(0, dot) : fileName, 'file')}${extension}`
  return `inline; filename="${ascii}"; filename*=UTF-8''${extValue(fileName)}`
}
