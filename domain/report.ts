// A child's printable report: its facts gathered and scored as the growth
// route scores them, its chart pages drawn from the same curves the
// growth-standards route serves, then written as a PDF in the reader's
// language and units.
import type { Db } from '../db/client'
import { growthSource, type ChartOptions, type GrowthReference } from '../lib/growth/charts'
import { childGrowth } from '../lib/growth/child'
import { referenceCurve, type Indicator } from '../lib/growth/curves'
import type { GrowthTables } from '../lib/growth/tables'
import { CROSSING_MAX_DAYS } from '../lib/growth/trends'
import { choice, text } from '../lib/i18n'
import { chartLength, chartWeight, unitNames } from '../lib/i18n/units'
import type { Language, UnitSystem } from '../lib/preferences'
import { ageAxis, CDC_CENTILES, WHO_CENTILES, type ChartPage } from '../lib/report/chart'
import { writeReport, type ReportInput, type ReportRow } from '../lib/report/document'
import { growthChild, growthMeasurements } from '../sql/growth'
import { dueOfChildren } from '../sql/medical-events'
import { vaccinesGiven } from '../sql/report'

/** The charts a report can draw, in its order. */
export const REPORT_CHARTS = ['weight', 'height', 'head', 'bmi', 'weight-for-length'] as const
export type ReportChart = typeof REPORT_CHARTS[number]

export interface ReportRequest {
  childId: number
  reference?: GrowthReference
  charts?: ReportChart[]
  from?: string
  to?: string
  units: UnitSystem
  language: Language
  today: string
}

/** The charts of the growth plugin: WHO's tables or null when they are missing (for WHO and auto). */
export type Charts = (reference: GrowthReference) => { tables: GrowthTables | null, options: ChartOptions }

interface ChartSpec { indicator: Indicator, quantity: 'weight' | 'length' | 'head' | 'bmi', x: (row: ReportRow & { scoredDays: number }) => number | null, y: (row: ReportRow) => number | null }

const SPECS: Record<ReportChart, ChartSpec> = {
  weight: { indicator: 'weight-for-age', quantity: 'weight', x: row => row.scoredDays, y: row => row.weightKg },
  height: { indicator: 'height-for-age', quantity: 'length', x: row => row.scoredDays, y: row => row.heightCm },
  head: { indicator: 'head-circumference-for-age', quantity: 'head', x: row => row.scoredDays, y: row => row.headCircumferenceCm },
  bmi: { indicator: 'bmi-for-age', quantity: 'bmi', x: row => row.scoredDays, y: row => row.bmi },
  'weight-for-length': { indicator: 'weight-for-length', quantity: 'weight', x: row => row.heightCm, y: row => row.weightKg }
}

/** Gathers what a report shows and writes it; undefined when the child is gone. */
export async function childReport (db: Db, charts: Charts, request: ReportRequest): Promise<{ name: string, pdf: ReturnType<typeof writeReport> } | undefined> {
  const child = await growthChild(db, request.childId)
  if (child === undefined) return undefined
  const reference = request.reference ?? child.growthReference
  const [measurements, given, due] = await Promise.all([
    growthMeasurements(db, request.childId, request.from ?? null, request.to ?? null, Math.ceil(CROSSING_MAX_DAYS)),
    vaccinesGiven(db, request.childId),
    dueOfChildren(db, { childIds: [request.childId] }, request.today, ['due', 'overdue', 'upcoming'])
  ])
  let scoring: ReturnType<Charts> | null = null
  try {
    scoring = charts(reference)
  } catch (error) {
    if ((error as { code?: string }).code !== 'GROWTH_DATA_MISSING') throw error
  }
  const growthOf = { id: request.childId, ...child }
  const inRange = measurements.filter(measured => (request.from === undefined || measured.measuredAt >= request.from))
  const rows: Array<ReportRow & { scoredDays: number }> = scoring === null
    ? inRange.map(measured => {
      const ageDays = Math.round((Date.parse(measured.measuredAt) - Date.parse(child.dateOfBirth)) / 86_400_000)
      const bmi = measured.weightKg !== null && measured.heightCm !== null ? Math.round(measured.weightKg / (measured.heightCm / 100) ** 2 * 10) / 10 : null
      return { date: measured.measuredAt, ageDays, scoredDays: ageDays, weightKg: measured.weightKg, heightCm: measured.heightCm, headCircumferenceCm: measured.headCircumferenceCm, bmi, weight: null, height: null, head: null, bmiPercentile: null }
    })
    : []
  const growth = scoring === null ? null : childGrowth(scoring.tables, growthOf, measurements, scoring.options)
  const points = growth?.points.filter(point => request.from === undefined || point.measuredAt >= request.from) ?? []
  for (const point of points) {
    rows.push({
      date: point.measuredAt,
      ageDays: point.ageDays,
      scoredDays: point.correctedAgeDays ?? point.ageDays,
      weightKg: point.weightKg,
      heightCm: point.heightCm,
      headCircumferenceCm: point.headCircumferenceCm,
      bmi: point.bmi,
      weight: point.weightForAge?.percentile ?? null,
      height: point.heightForAge?.percentile ?? null,
      head: point.headCircumferenceForAge?.percentile ?? null,
      bmiPercentile: point.bmiForAge?.percentile ?? null
    })
  }
  const dates = new Map(points.map(point => [point.measurementId, point.measuredAt]))
  const ageDays = Math.round((Date.parse(request.today) - Date.parse(child.dateOfBirth)) / 86_400_000)
  const latest = points.at(-1)
  const input: ReportInput = {
    preferences: { units: request.units, language: request.language },
    today: request.today,
    child: { name: child.name, sex: child.sex, dateOfBirth: child.dateOfBirth, ageDays, correctedAgeDays: latest?.correctedAgeDays == null ? null : latest.correctedAgeDays + (ageDays - latest.ageDays) },
    source: growth?.source ?? null,
    whoMissing: scoring === null,
    alerts: (growth?.alerts ?? []).filter(alert => dates.has(alert.measurementId)).map(alert => ({ date: dates.get(alert.measurementId) as string, indicator: alert.indicator, kind: alert.kind })),
    vaccinesGiven: given,
    vaccinesDue: due.children[0]?.items ?? [],
    rows,
    charts: scoring === null || child.sex === 'other' ? [] : chartPages(scoring, child.sex as 'female' | 'male', reference, rows, request)
  }
  return { name: child.name, pdf: writeReport(input) }
}

/** A page for each chart asked for (or each with data) that the reference draws. */
function chartPages (scoring: ReturnType<Charts>, sex: 'female' | 'male', reference: GrowthReference, rows: Array<ReportRow & { scoredDays: number }>, request: ReportRequest): ChartPage[] {
  const { language, units } = request
  const names = unitNames(units)
  const pages: ChartPage[] = []
  for (const chart of request.charts ?? REPORT_CHARTS) {
    const spec = SPECS[chart]
    const values = rows.map(row => ({ x: spec.x(row), y: spec.y(row) })).filter((point): point is { x: number, y: number } => point.x !== null && point.y !== null)
    if (values.length === 0 && request.charts === undefined) continue
    const byAge = spec.indicator !== 'weight-for-length'
    const lastX = Math.max(...values.map(point => point.x), byAge ? 365 : 0)
    const range = byAge
      ? { from: 0, to: Math.ceil(lastX * 1.1 + 30), step: Math.max(1, Math.ceil(lastX / 150)) }
      : { from: Math.max(0, Math.min(...values.map(point => point.x), 65) - 5), to: Math.max(...values.map(point => point.x), 85) + 5, step: 0.5 }
    const curve = referenceCurve(scoring.tables, spec.indicator, sex, range, scoring.options)
    if (curve.points.length === 0) continue
    const axis = ageAxis(byAge ? range.to : 0)
    const xOf = byAge ? axis.of : (cm: number) => chartLength(cm, units)
    const yOf = (value: number): number => spec.quantity === 'weight' ? chartWeight(value, units) : spec.quantity === 'bmi' ? value : chartLength(value, units)
    const centiles = reference === 'cdc' ? CDC_CENTILES : WHO_CENTILES
    pages.push({
      title: text(language, 'report.chartTitle', { indicator: choice(spec.indicator) }),
      subtitle: `${growthSource(reference)} · ${text(language, 'report.sexValue', { sex })}`,
      xLabel: byAge ? text(language, 'report.axis', { quantity: axis.unit, unit: '' }) : text(language, 'report.axis', { quantity: 'length', unit: names.length }),
      yLabel: text(language, 'report.axis', { quantity: spec.quantity, unit: spec.quantity === 'weight' ? names.weight : names.length }),
      xOf,
      yOf,
      curve,
      centiles,
      points: values.map(point => ({ x: xOf(point.x), y: yOf(point.y) })),
      note: text(language, 'report.centiles', { list: centiles.map(centile => `P${centile}`).join(', ') })
    })
  }
  return pages
}
