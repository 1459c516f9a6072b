/** The most levels of objects and arrays a JSON body may nest: every body of the API needs fewer than ten. */
export const MAX_JSON_DEPTH = 64

const QUOTE = 0x22
const BACKSLASH = 0x5c

/**
 * Whether JSON text nests objects and arrays more than `limit` levels deep,
 * read as text in one pass, before it is parsed and without recursion:
 * brackets inside strings are not counted. Text that is not JSON is left to
 * the parser to refuse.
 */
export function nestedDeeperThan (text: string, limit: number = MAX_JSON_DEPTH): boolean {
  let depth = 0
  for (let at = 0; at < text.length; at++) {
    switch (text.charCodeAt(at)) {
      case QUOTE:
        at = closingQuote(text, at)
        break
      case 0x5b: // [
      case 0x7b: // {
        if (++depth > limit) return true
        break
      case 0x5d: // ]
      case 0x7d: // }
        depth--
    }
  }
  return false
}

/** Where the string opened at `opening` closes: its next quote after an even number of backslashes, or the end of the text. */
function closingQuote (text: string, opening: number): number {
  for (let at = text.indexOf('"', opening + 1); at !== -1; at = text.indexOf('"', at + 1)) {
    let backslashes = 0
    while (text.charCodeAt(at - backslashes - 1) === BACKSLASH) backslashes++
    if (backslashes % 2 === 0) return at
  }
  return text.length
}
