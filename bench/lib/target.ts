/** A target of the benchmark: what it asks, the figure measured, and whether it was met (null: only reported). */
export interface Target {
  target: string
  figure: string
  met: boolean | null
}

/** A table's cell, padded to its column's width: on the left for figures. */
export function pad (text: string, width: number, right = false): string {
  return right ? text.padStart(width) : text.padEnd(width)
}
