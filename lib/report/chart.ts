import type { Curve } from '../growth/curves'
import { lmsValue, normalQuantile } from '../growth/lms'
import { DAYS_PER_MONTH } from '../growth/scores'

/** The centile lines a clinic's chart draws: WHO's, and CDC's. */
export const WHO_CENTILES = [3, 15, 50, 85, 97]
export const CDC_CENTILES = [5, 10, 25, 50, 75, 90, 95]

/** One chart page: the reference's curve, its centile lines and the child's points, in the units the page shows. */
export interface ChartPage {
  title: string
  subtitle: string
  xLabel: string
  yLabel: string
  /** The x of a curve point and of a child's point, in the page's units (months or years of age, cm or in). */
  xOf: (x: number) => number
  /** The y of a reference value (kg, cm, kg/m²), in the page's units. */
  yOf: (value: number) => number
  curve: Curve
  centiles: number[]
  /** The child's points, in the page's units, in order. */
  points: Array<{ x: number, y: number }>
  note: string
}

interface Box { left: number, top: number, width: number, height: number }

/** Round steps for an axis: 1, 2 or 5 times a power of ten, about `count` of them. */
function ticks (low: number, high: number, count: number): number[] {
  const raw = (high - low) / count
  const power = 10 ** Math.floor(Math.log10(raw))
  const step = [1, 2, 5, 10].map(factor => factor * power).find(candidate => candidate >= raw) ?? raw
  const out: number[] = []
  for (let value = Math.ceil(low / step) * step; value <= high + step / 1e6; value += step) out.push(Number(value.toFixed(6)))
  return out
}

/** The centile lines' values at each point of the curve, from its LMS: the same curves the growth-standards route serves. */
function centileLines (page: ChartPage): Array<{ centile: number, line: Array<{ x: number, y: number }> }> {
  return page.centiles.map(centile => {
    const z = normalQuantile(centile / 100)
    return { centile, line: page.curve.points.map(point => ({ x: page.xOf(point.x), y: page.yOf(lmsValue(point, z)) })) }
  })
}

/** Draws a chart on the current page, in vectors: axes and grid, the centile lines labelled at their end, the child's points joined. */
export function drawChart (doc: PDFKit.PDFDocument, page: ChartPage): void {
  const margin = doc.page.margins
  doc.fontSize(16).fillColor('black').text(page.title, margin.left, margin.top)
  doc.fontSize(10).fillColor('#444444').text(page.subtitle)
  const box: Box = { left: margin.left + 40, top: doc.y + 16, width: doc.page.width - margin.left - margin.right - 70, height: 0 }
  box.height = doc.page.height - margin.bottom - 60 - box.top
  const lines = centileLines(page)
  const xs = [...lines.flatMap(({ line }) => line.map(point => point.x)), ...page.points.map(point => point.x)]
  const ys = [...lines.flatMap(({ line }) => line.map(point => point.y)), ...page.points.map(point => point.y)]
  const [xLow, xHigh] = [Math.min(...xs), Math.max(...xs)]
  const yPad = (Math.max(...ys) - Math.min(...ys)) * 0.04
  const [yLow, yHigh] = [Math.max(0, Math.min(...ys) - yPad), Math.max(...ys) + yPad]
  const px = (x: number): number => box.left + (x - xLow) / (xHigh - xLow || 1) * box.width
  const py = (y: number): number => box.top + box.height - (y - yLow) / (yHigh - yLow || 1) * box.height

  doc.lineWidth(0.3).strokeColor('#bbbbbb')
  doc.fontSize(8).fillColor('#333333')
  for (const x of ticks(xLow, xHigh, 12)) {
    doc.moveTo(px(x), box.top).lineTo(px(x), box.top + box.height).stroke()
    doc.text(String(x), px(x) - 15, box.top + box.height + 4, { width: 30, align: 'center' })
  }
  for (const y of ticks(yLow, yHigh, 12)) {
    doc.moveTo(box.left, py(y)).lineTo(box.left + box.width, py(y)).stroke()
    doc.text(String(y), box.left - 34, py(y) - 4, { width: 30, align: 'right' })
  }
  doc.lineWidth(0.8).strokeColor('black').rect(box.left, box.top, box.width, box.height).stroke()
  doc.fontSize(9).fillColor('black').text(page.xLabel, box.left, box.top + box.height + 18, { width: box.width, align: 'center' })
  doc.save().rotate(-90, { origin: [margin.left, box.top + box.height / 2] })
    .text(page.yLabel, margin.left - box.height / 2, box.top + box.height / 2 - 12, { width: box.height, align: 'center' }).restore()

  for (const { centile, line } of lines) {
    if (line.length === 0) continue
    doc.lineWidth(centile === 50 ? 1.4 : 0.8).strokeColor(centile === 50 ? '#1f5fa8' : '#6f9fd8')
    line.forEach((point, index) => index === 0 ? doc.moveTo(px(point.x), py(point.y)) : doc.lineTo(px(point.x), py(point.y)))
    doc.stroke()
    const end = line[line.length - 1]
    doc.fontSize(7).fillColor('#1f5fa8').text(`P${centile}`, px(end.x) + 3, py(end.y) - 3, { lineBreak: false })
  }

  doc.lineWidth(1.2).strokeColor('#c0392b').fillColor('#c0392b')
  page.points.forEach((point, index) => index === 0 ? doc.moveTo(px(point.x), py(point.y)) : doc.lineTo(px(point.x), py(point.y)))
  if (page.points.length > 1) doc.stroke()
  for (const point of page.points) doc.circle(px(point.x), py(point.y), 2.2).fill()

  doc.fontSize(8).fillColor('#444444').text(page.note, margin.left, doc.page.height - margin.bottom - 24, { width: doc.page.width - margin.left - margin.right })
}

/** Ages on a chart: months up to three years, years beyond. */
export function ageAxis (lastAgeDays: number): { unit: 'months' | 'years', of: (days: number) => number } {
  return lastAgeDays <= 36 * DAYS_PER_MONTH
    ? { unit: 'months', of: days => days / DAYS_PER_MONTH }
    : { unit: 'years', of: days => days / (12 * DAYS_PER_MONTH) }
}
