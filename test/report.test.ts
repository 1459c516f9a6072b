import t from 'tap'
import { build, call, familyOf, join, register, withoutGrowthTables, type App, type Pair } from './helper'
import { pdfObjects, readPdf } from './pdf-reader'

const A4 = { width: 595.28, height: 841.89 }
const LETTER = { width: 612, height: 792 }
const MEASUREMENTS = [
  { measuredAt: '2024-01-10', weightKg: 3.4, heightCm: 50.2, headCircumferenceCm: 34.5 },
  { measuredAt: '2024-03-10', weightKg: 5.6, heightCm: 58.1, headCircumferenceCm: 39 },
  { measuredAt: '2024-07-10', weightKg: 7.3, heightCm: 65.4, headCircumferenceCm: 42 },
  { measuredAt: '2025-01-10', weightKg: 9.875, heightCm: 75.3, headCircumferenceCm: 45.2 },
  { measuredAt: '2025-07-10', weightKg: 10.9, heightCm: 81, headCircumferenceCm: 46.5 },
  { measuredAt: '2026-01-10', weightKg: 12.1, heightCm: 86.4, headCircumferenceCm: 47.6 }
]

async function family (app: App): Promise<{ owner: Pair, childId: number }> {
  const owner = await register(app)
  const child = await call(app, owner, 'POST', '/api/children', { name: 'Zoë Fontaine', dateOfBirth: '2024-01-10', sex: 'female', familyId: familyOf(owner) })
  const childId = child.json().id as number
  for (const measurement of MEASUREMENTS) t.equal((await call(app, owner, 'POST', `/api/children/${childId}/measurements`, measurement)).statusCode, 201)
  t.equal((await call(app, owner, 'POST', `/api/children/${childId}/medical-events`, { type: 'vaccine', name: 'MMR', date: '2025-01-15', doseNumber: 1, nextDueDate: '2029-01-10' })).statusCode, 201)
  return { owner, childId }
}

async function pdf (app: App, pair: Pair, url: string): Promise<{ bytes: Buffer, headers: Record<string, unknown> }> {
  const res = await call(app, pair, 'GET', url)
  if (res.statusCode !== 200) throw new Error(`GET ${url} answered ${res.statusCode}: ${res.body}`)
  return { bytes: res.rawPayload, headers: res.headers }
}

t.test('a report in metric and English: the child, vaccines, measurements with percentiles and a chart page each, on A4, in embedded fonts and vectors', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open' } })
  const { owner, childId } = await family(app)
  const { bytes, headers } = await pdf(app, owner, `/api/children/${childId}/report.pdf`)
  t.equal(headers['content-type'], 'application/pdf')
  t.match(String(headers['content-disposition']), /^attachment; filename="Zoe-Fontaine-growth-report-\d{4}-\d{2}-\d{2}\.pdf"; filename\*=UTF-8''Zo%C3%AB-Fontaine/)
  t.equal(bytes.subarray(0, 5).toString(), '%PDF-')
  const read = await readPdf(bytes)
  t.equal(read.pages.length, 7, 'a first page, the measurements, and five charts')
  for (const page of read.pages) t.same({ width: Math.round(page.width * 100) / 100, height: Math.round(page.height * 100) / 100 }, A4, 'A4')
  const first = read.pages[0].text
  for (const words of ['Growth report', 'Zoë Fontaine', 'Date of birth: January 10, 2024', 'Sex: female', 'Chart: WHO', 'Red flags', 'Vaccines given', 'January 15, 2025: MMR, dose 1', 'Vaccines due', 'Red flags none', 'MMR, dose 2: from January 10, 2029']) {
    t.ok(first.includes(words), `the first page says "${words}"`)
  }
  t.notOk(first.includes('Corrected age'), 'a child born at term has no corrected age')
  const table = read.pages[1].text
  for (const words of ['Measurements', 'Weight', 'Length/height', '9.875 kg', '75.3 cm', '45.2 cm', '3.4 kg', 'January 10, 2026']) t.ok(table.includes(words), `the table says "${words}"`)
  t.match(table, /9\.875 kg · P\d+(\.\d)?/, 'a weight with its percentile')
  const charts = read.pages.slice(2).map(page => page.text)
  for (const [index, title] of ['Weight for age', 'Length/height for age', 'Head circumference for age', 'BMI for age', 'Weight for length'].entries()) {
    t.ok(charts[index].includes(title), `chart ${index + 1}: ${title}`)
    for (const centile of ['P3', 'P15', 'P50', 'P85', 'P97']) t.ok(charts[index].includes(centile), `${title}: the ${centile} line is labelled`)
  }
  t.ok(charts[0].includes('Age (months)') && charts[0].includes('Weight (kg)'), 'labelled axes in metric units')
  t.ok(charts[4].includes('Length/height (cm)'), 'weight for length by length in cm')
  const objects = pdfObjects(bytes)
  t.ok(objects.fonts.length >= 2 && objects.fonts.every(font => /^[A-Z]{6}\+DejaVuSans(-Bold)?$/.test(font)), `every font is a DejaVu Sans subset: ${objects.fonts.join(', ')}`)
  t.equal(objects.fontFiles, objects.fonts.length, 'each one embedded')

  // A weight that falls across the centile lines within weeks is a red flag, with its date and rule.
  t.equal((await call(app, owner, 'POST', `/api/children/${childId}/measurements`, { measuredAt: '2026-02-20', weightKg: 9.4 })).statusCode, 201)
  const flagged = await readPdf((await pdf(app, owner, `/api/children/${childId}/report.pdf?charts=weight`)).bytes)
  t.ok(flagged.pages[0].text.includes('February 20, 2026: weight for age, crossed two or more centile lines downward'), flagged.pages[0].text)
  t.equal(objects.images, 0, 'no raster image')
})

t.test('units and language: from the preferences, or from the query; imperial prints on US Letter', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open' } })
  const { owner, childId } = await family(app)
  const german = await readPdf((await pdf(app, owner, `/api/children/${childId}/report.pdf?units=imperial&lang=de`)).bytes)
  for (const page of german.pages) t.same({ width: page.width, height: page.height }, LETTER, 'US Letter')
  for (const words of ['Wachstumsbericht', 'Geburtsdatum: 10. Januar 2024', 'Geschlecht: weiblich', 'Erhaltene Impfungen', '15. Januar 2025: MMR, Dosis 1', 'Messungen', 'Gewicht nach Alter', 'Gewicht (lb)', 'Alter (Monate)']) {
    t.ok(german.text.includes(words), `German: "${words}"`)
  }
  // 9.875 kg = 21.771 lb = 348.33 oz: 21 lb 12 oz; 75.3 cm = 29.646 in.
  t.ok(german.text.includes('21 lb 12 oz'), 'a weight in pounds and ounces')
  t.ok(german.text.includes('29,6 in'), 'a length in inches, as German writes decimals')
  t.notOk(german.text.includes('9,875 kg'), 'no kilograms')

  t.equal((await call(app, owner, 'PATCH', '/api/me', { preferences: { language: 'fr', units: 'imperial' } })).statusCode, 200)
  const french = await readPdf((await pdf(app, owner, `/api/children/${childId}/report.pdf?charts=weight`)).bytes)
  t.equal(french.pages.length, 3, 'the first page, the table and the one chart asked for')
  t.same({ width: french.pages[0].width, height: french.pages[0].height }, LETTER)
  for (const words of ['Rapport de croissance', 'Date de naissance : 10 janvier 2024', 'Vaccins reçus', '21 lb 12 oz', '29,6 po', 'Poids selon l’âge', 'Poids (lb)']) {
    t.ok(french.text.replace(/\u202f/g, ' ').includes(words), `French, from the preferences: "${words}"`)
  }
  const spanish = await readPdf((await pdf(app, owner, `/api/children/${childId}/report.pdf?lang=es&units=metric&reference=cdc&charts=height,bmi`)).bytes)
  t.equal(spanish.pages.length, 4)
  for (const words of ['Informe de crecimiento', 'Fecha de nacimiento: 10 de enero de 2024', 'Vacunas recibidas', '9,875 kg', '75,3 cm', 'Talla para la edad', 'IMC para la edad', 'CDC']) {
    t.ok(spanish.text.includes(words), `Spanish on CDC's charts: "${words}"`)
  }
  for (const centile of ['P5', 'P10', 'P25', 'P75', 'P90', 'P95']) t.ok(spanish.pages[2].text.includes(centile), `CDC's ${centile} line`)
})

t.test('members and viewers get the report, others do not; a bad query is a 400', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open' } })
  const { owner, childId } = await family(app)
  const viewer = await register(app)
  await join(app, owner, familyOf(owner), viewer, 'viewer')
  t.equal((await call(app, viewer, 'GET', `/api/children/${childId}/report.pdf`)).statusCode, 200, 'a viewer')
  const stranger = await register(app)
  const refused = await call(app, stranger, 'GET', `/api/children/${childId}/report.pdf`)
  t.ok([403, 404].includes(refused.statusCode), `a stranger: ${refused.statusCode}`)
  t.notOk(refused.body.includes('Zoë'))
  t.equal((await call(app, owner, 'GET', '/api/children/999999/report.pdf')).statusCode, 404, 'no such child')
  t.equal((await call(app, null, 'GET', `/api/children/${childId}/report.pdf`)).statusCode, 401)
  for (const query of ['charts=weight,feet', 'charts=weight,', 'units=si', 'lang=it', 'reference=nhs', 'from=2025-02-30', 'from=2026-01-01&to=2025-01-01']) {
    const res = await call(app, owner, 'GET', `/api/children/${childId}/report.pdf?${query}`)
    t.equal(res.statusCode, 400, `${query}: 400`)
    t.equal(res.json().code, 'VALIDATION_ERROR', query)
  }
  const ranged = await readPdf((await pdf(app, owner, `/api/children/${childId}/report.pdf?from=2025-01-01&to=2025-12-31&charts=weight`)).bytes)
  t.ok(ranged.pages[1].text.includes('9.875 kg') && ranged.pages[1].text.includes('10.9 kg'), 'the measurements in range')
  t.notOk(ranged.pages[1].text.includes('3.4 kg') || ranged.pages[1].text.includes('12.1 kg'), 'and none outside it')
})

t.test('a child born preterm shows a corrected age while it applies', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open' } })
  const owner = await register(app)
  const born = new Date(Date.now() - 120 * 86_400_000).toISOString().slice(0, 10)
  const child = await call(app, owner, 'POST', '/api/children', { name: 'Noa Early', dateOfBirth: born, sex: 'male', familyId: familyOf(owner), gestationalAgeAtBirthWeeks: 30 })
  t.equal(child.statusCode, 201, child.body)
  const measuredAt = new Date(Date.now() - 30 * 86_400_000).toISOString().slice(0, 10)
  t.equal((await call(app, owner, 'POST', `/api/children/${child.json().id}/measurements`, { measuredAt, weightKg: 3.1, heightCm: 49 })).statusCode, 201)
  const first = (await readPdf((await pdf(app, owner, `/api/children/${child.json().id}/report.pdf?charts=weight`)).bytes)).pages[0].text
  // 120 days old, 70 days (10 weeks) early: 50 days corrected, one whole month.
  t.ok(first.includes('Age: 0 years, 3 months'), first)
  t.ok(first.includes('Corrected age: 0 years, 1 month'), first)
})

t.test('without WHO\'s tables the report leaves their charts out and says why; CDC\'s still draw', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open', ...(await withoutGrowthTables(t)) } })
  const { owner, childId } = await family(app)
  const who = await readPdf((await pdf(app, owner, `/api/children/${childId}/report.pdf`)).bytes)
  t.equal(who.pages.length, 2, 'the first page and the measurements')
  t.ok(who.pages[0].text.includes('WHO\'s growth tables are not installed on this service'), 'the first page says why')
  t.ok(who.pages[1].text.includes('9.875 kg'), 'the values are there, without percentiles')
  t.notOk(who.pages[1].text.includes('· P'))
  const cdc = await readPdf((await pdf(app, owner, `/api/children/${childId}/report.pdf?reference=cdc`)).bytes)
  t.equal(cdc.pages.length, 7, 'CDC\'s charts ship with the service')
})
