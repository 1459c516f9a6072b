import type { Lms } from './tables'

/** z = ((X/M)^L − 1)/(L·S), or ln(X/M)/S where L is 0. */
export function lmsZ (x: number, { l, m, s }: Lms): number {
  return l === 0 ? Math.log(x / m) / s : ((x / m) ** l - 1) / (l * s)
}

/** The value at z standard deviations: M(1 + L·S·z)^(1/L). */
export function lmsValue ({ l, m, s }: Lms, z: number): number {
  return l === 0 ? m * Math.exp(s * z) : m * (1 + l * s * z) ** (1 / l)
}

/**
 * WHO's restricted z-score: beyond ±3 the distance from the ±3 SD value is
 * measured in units of the gap between the 2 and 3 SD values.
 */
export function restrictedZ (x: number, lms: Lms): number {
  const z = lmsZ(x, lms)
  if (z > 3) {
    const sd3 = lmsValue(lms, 3)
    return 3 + (x - sd3) / (sd3 - lmsValue(lms, 2))
  }
  if (z < -3) {
    const sdMinus3 = lmsValue(lms, -3)
    return -3 + (x - sdMinus3) / (lmsValue(lms, -2) - sdMinus3)
  }
  return z
}

const LOG_SQRT_2PI = 0.5 * Math.log(2 * Math.PI)

/** Φ(z), the standard normal distribution function, by its Taylor series (Marsaglia 2004). */
export function normalCdf (z: number): number {
  if (z < -9) return 0
  if (z > 9) return 1
  const z2 = z * z
  let term = z
  let sum = z
  for (let i = 3; sum + term !== sum; i += 2) {
    term = term * z2 / i
    sum += term
  }
  return 0.5 + sum * Math.exp(-z2 / 2 - LOG_SQRT_2PI)
}

/** Φ⁻¹(p), by bisection: exact to double precision, used only for a few constants. */
export function normalQuantile (p: number): number {
  let low = -9
  let high = 9
  for (let i = 0; i < 100; i++) {
    const middle = (low + high) / 2
    if (normalCdf(middle) < p) low = middle
    else high = middle
  }
  return (low + high) / 2
}

/** Rounded to `digits` decimals, halves away from zero. */
export function roundTo (x: number, digits: number): number {
  const factor = 10 ** digits
  const rounded = Math.sign(x) * Math.round(Math.abs(x) * factor) / factor
  return rounded === 0 ? 0 : rounded
}

/** Rounded to a whole number, halves up, as WHO rounds an age in days. */
export function roundHalfUp (x: number): number {
  const whole = Math.floor(x)
  return x - whole >= 0.5 ? whole + 1 : whole
}
