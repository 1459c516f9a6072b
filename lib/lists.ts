/** A value that may be one or many (a route's method, its hooks of one kind), as a list. */
export function listOf<T> (value: T | T[] | undefined): T[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value]
}
