import { choice, longDate, text } from '../i18n'
import { lengthText, numberText, weightText } from '../i18n/units'
import type { Preferences } from '../preferences'
import { DAYS_PER_MONTH } from '../growth/scores'
import { drawChart, type ChartPage } from './chart'

/** The font every text of a report is set in, embedded: DejaVu Sans, from its npm package, so every machine has it. */
const FONT = (): string => require.resolve('dejavu-fonts-ttf/ttf/DejaVuSans.ttf')
const BOLD = (): string => require.resolve('dejavu-fonts-ttf/ttf/DejaVuSans-Bold.ttf')

export interface ReportRow {
  date: string
  ageDays: number
  weightKg: number | null
  heightCm: number | null
  headCircumferenceCm: number | null
  bmi: number | null
  /** Percentiles, where scored. */
  weight: number | null
  height: number | null
  head: number | null
  bmiPercentile: number | null
}

/** What a report shows, gathered and scored; the texts are made here, in the reader's language and units. */
export interface ReportInput {
  preferences: Pick<Preferences, 'units' | 'language'>
  today: string
  child: { name: string, sex: string, dateOfBirth: string, ageDays: number, correctedAgeDays: number | null }
  /** The chart used, or null when none could score (WHO's tables missing). */
  source: string | null
  whoMissing: boolean
  alerts: Array<{ date: string, indicator: string, kind: string }>
  vaccinesGiven: Array<{ name: string, date: string, doseNumber: number | null }>
  vaccinesDue: Array<{ name: string, doseNumber: number | null, status: string, dueFrom: string, dueBy: string }>
  rows: ReportRow[]
  charts: ChartPage[]
}

/** Years and whole months of an age in days. */
function ageText (language: Preferences['language'], days: number): string {
  const months = Math.floor(days / DAYS_PER_MONTH)
  return text(language, 'report.ageValue', { years: Math.floor(months / 12), months: months % 12 })
}

/**
 * Writes a report as a PDF: a first page with the child, the chart used,
 * red flags and vaccines; the measurements with their percentiles; a page
 * per chart. A4 for metric, US Letter for imperial; every text in one
 * embedded TrueType font, every line a vector. The document is a stream,
 * ended here, to be piped to the client.
 */
export function writeReport (input: ReportInput): PDFKit.PDFDocument {
  const PDFDocument = require('pdfkit') as typeof import('pdfkit')
  const { language, units } = input.preferences
  const say = (key: Parameters<typeof text>[1], values?: Record<string, string | number>): string => text(language, key, values)
  const date = (value: string): string => longDate(language, value)
  const doc = new PDFDocument({
    size: units === 'imperial' ? 'LETTER' : 'A4',
    margin: 50,
    font: FONT(),
    info: { Title: `${say('report.title')}: ${input.child.name}`, Producer: 'child-health', Creator: 'child-health' },
    lang: language
  })
  doc.registerFont('body', FONT())
  doc.registerFont('bold', BOLD())
  const heading = (value: string): void => {
    doc.moveDown(0.8).font('bold').fontSize(12).fillColor('black').text(value).font('body').fontSize(10).moveDown(0.2)
  }
  const field = (label: string, value: string): void => {
    doc.font('bold').text(say('report.label', { label }), { continued: true }).font('body').text(value)
  }

  doc.font('bold').fontSize(20).text(say('report.title'))
  doc.font('body').fontSize(9).fillColor('#444444').text(say('report.made', { date: date(input.today) })).fillColor('black').moveDown()
  doc.font('bold').fontSize(16).text(input.child.name).font('body').fontSize(10).moveDown(0.3)
  field(say('report.dateOfBirth'), date(input.child.dateOfBirth))
  field(say('report.sex'), say('report.sexValue', { sex: input.child.sex }))
  field(say('report.age'), ageText(language, input.child.ageDays))
  if (input.child.correctedAgeDays !== null) field(say('report.correctedAge'), ageText(language, Math.max(0, input.child.correctedAgeDays)))
  field(say('report.chart'), input.source ?? '–')
  if (input.whoMissing) doc.fillColor('#c0392b').text(say('report.whoMissing')).fillColor('black')

  heading(say('report.redFlags'))
  if (input.alerts.length === 0) doc.text(say('report.none'))
  for (const alert of input.alerts) {
    doc.text(`• ${say('report.alert', { date: date(alert.date), indicator: say('report.indicator', { indicator: choice(alert.indicator) }), kind: choice(alert.kind) })}`)
  }
  const dose = (name: string, doseNumber: number | null): string => doseNumber === null ? name : say('report.dose', { vaccine: name, dose: doseNumber })
  heading(say('report.vaccinesGiven'))
  if (input.vaccinesGiven.length === 0) doc.text(say('report.none'))
  for (const given of input.vaccinesGiven) doc.text(`• ${date(given.date)}: ${dose(given.name, given.doseNumber)}`)
  heading(say('report.vaccinesDue'))
  if (input.vaccinesDue.length === 0) doc.text(say('report.none'))
  for (const due of input.vaccinesDue) {
    const when = say('report.due', { status: due.status, date: date(due.status === 'overdue' ? due.dueBy : due.dueFrom) })
    doc.text(`• ${dose(due.name, due.doseNumber)}: ${when}`)
  }

  writeTable(doc, input, say, date)
  for (const chart of input.charts) {
    doc.addPage()
    drawChart(doc, chart)
  }
  doc.end()
  return doc
}

/** The measurements, oldest first, each value with its percentile: on as many pages as they need. */
function writeTable (doc: PDFKit.PDFDocument, input: ReportInput, say: (key: Parameters<typeof text>[1], values?: Record<string, string | number>) => string, date: (value: string) => string): void {
  const { language, units } = input.preferences
  doc.addPage()
  doc.font('bold').fontSize(14).text(say('report.measurements')).moveDown(0.5)
  const left = doc.page.margins.left
  const width = doc.page.width - left - doc.page.margins.right
  const columns = ['date', 'age', 'weight', 'height', 'head', 'bmi']
  const widths = [0.17, 0.17, 0.2, 0.17, 0.15, 0.14].map(share => share * width)
  const row = (cells: string[], bold = false): void => {
    if (doc.y > doc.page.height - doc.page.margins.bottom - 20) doc.addPage()
    const y = doc.y
    let x = left
    doc.font(bold ? 'bold' : 'body').fontSize(8)
    cells.forEach((cell, index) => {
      doc.text(cell, x, y, { lineBreak: false })
      x += widths[index]
    })
    doc.x = left
    doc.y = y + 13
  }
  const withPercentile = (value: string | null, percentile: number | null): string =>
    value === null ? '' : percentile === null ? value : `${value} · P${numberText(percentile, language, 1)}`
  row(columns.map(column => say('report.column', { column })), true)
  for (const measured of input.rows) {
    row([
      date(measured.date),
      say('report.ageMonths', { months: numberText(measured.ageDays / DAYS_PER_MONTH, language, 1) }),
      withPercentile(measured.weightKg === null ? null : weightText(measured.weightKg, units, language), measured.weight),
      withPercentile(measured.heightCm === null ? null : lengthText(measured.heightCm, units, language), measured.height),
      withPercentile(measured.headCircumferenceCm === null ? null : lengthText(measured.headCircumferenceCm, units, language), measured.head),
      withPercentile(measured.bmi === null ? null : numberText(measured.bmi, language, 1), measured.bmiPercentile)
    ])
  }
}
