import type { Language, UnitSystem } from '../preferences'

/** Values in the units a user reads: kg, cm and °C, or lb and oz, in and °F. The API's JSON stays in SI units. */
export const KG_PER_LB = 0.45359237
export const CM_PER_IN = 2.54
const OZ_PER_LB = 16

const formats = new Map<string, Intl.NumberFormat>()

function number (language: Language, unit: string | null, fractionDigits: { min: number, max: number }): Intl.NumberFormat {
  const key = `${language}:${unit ?? ''}:${fractionDigits.min}:${fractionDigits.max}`
  let format = formats.get(key)
  if (format === undefined) {
    format = new Intl.NumberFormat(language, {
      ...(unit === null ? {} : { style: 'unit', unit, unitDisplay: 'short' }),
      minimumFractionDigits: fractionDigits.min,
      maximumFractionDigits: fractionDigits.max
    })
    formats.set(key, format)
  }
  return format
}

/** A weight: "12.346 kg" (3 decimals at most), or "27 lb 3 oz" (whole ounces). */
export function weightText (kg: number, units: UnitSystem, language: Language): string {
  if (units === 'metric') return number(language, 'kilogram', { min: 0, max: 3 }).format(kg)
  let ounces = Math.round(kg / KG_PER_LB * OZ_PER_LB)
  const pounds = Math.floor(ounces / OZ_PER_LB)
  ounces -= pounds * OZ_PER_LB
  return `${number(language, 'pound', { min: 0, max: 0 }).format(pounds)} ${number(language, 'ounce', { min: 0, max: 0 }).format(ounces)}`
}

/** A length, height or head circumference: "85.3 cm" or "33.6 in", one decimal. */
export function lengthText (cm: number, units: UnitSystem, language: Language): string {
  return units === 'metric'
    ? number(language, 'centimeter', { min: 1, max: 1 }).format(cm)
    : number(language, 'inch', { min: 1, max: 1 }).format(cm / CM_PER_IN)
}

/** A temperature: "38.5 °C" or "101.3 °F", one decimal. */
export function temperatureText (celsius: number, units: UnitSystem, language: Language): string {
  return units === 'metric'
    ? number(language, 'celsius', { min: 1, max: 1 }).format(celsius)
    : number(language, 'fahrenheit', { min: 1, max: 1 }).format(celsius * 9 / 5 + 32)
}

/** A plain number as the language writes it, with at most `max` decimals. */
export function numberText (value: number, language: Language, max = 1): string {
  return number(language, null, { min: 0, max }).format(value)
}

/** The chart's value of a weight (kg or decimal lb) or a length (cm or in). */
export function chartWeight (kg: number, units: UnitSystem): number {
  return units === 'metric' ? kg : kg / KG_PER_LB
}

export function chartLength (cm: number, units: UnitSystem): number {
  return units === 'metric' ? cm : cm / CM_PER_IN
}

/** The short names of the chart's units. */
export function unitNames (units: UnitSystem): { weight: string, length: string } {
  return units === 'metric' ? { weight: 'kg', length: 'cm' } : { weight: 'lb', length: 'in' }
}
