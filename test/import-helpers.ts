import type { ChildProcess } from 'node:child_process'
import type { Test } from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { readdirSync } from 'node:fs'
import sharp from 'sharp'
import yauzl from 'yauzl'
import { ZipFile } from 'yazl'
import { build, call, register, type Pair } from './helper'
import { file as part, form } from './multipart'
import { startNode, type Run } from './processes'

export { cli, type Run } from './processes'

/** What the import tests share: a family made through the routes, archives taken apart and put together, and views that compare families. */

export type App = Awaited<ReturnType<typeof build>>
export type Json = any

export const OPEN = { REGISTRATION: 'open' }

export async function created (app: App, pair: Pair, url: string, payload: unknown): Promise<Json> {
  const res = await call(app, pair, 'POST', url, payload)
  if (res.statusCode !== 201) throw new Error(`POST ${url} answered ${res.statusCode}: ${res.body}`)
  return res.json()
}

/** Uploads a file in the field `file`, after the given fields. */
export async function upload (app: App, pair: Pair, url: string, bytes: Buffer, fileName: string, type: string, fields: Record<string, string | number> = {}) {
  const { payload, headers } = form([...Object.entries(fields).map(([name, value]) => ({ name, value: String(value) })), part(bytes, fileName, type)])
  return call(app, pair, 'POST', url, payload, headers)
}

export function pdf (size = 3000): Buffer {
  return Buffer.concat([Buffer.from('%PDF-1.4\n'), randomBytes(size), Buffer.from('\n%%EOF\n')])
}

/** A family with two children and every kind of record, link and file, made through the real routes. */
export async function richFamily (app: App, owner: Pair): Promise<number> {
  const family = await created(app, owner, '/api/families', { name: 'Família Ødegård, "the first"' })
  for (const [name, birth] of [['Zoë', '2021-03-01'], ['Ari', '2023-07-15']]) {
    // Zoë was born preterm: her growth is scored at her corrected age. Ari's is on CDC's chart from 24 months, and he follows the US schedule.
    const preterm = name === 'Zoë' ? { gestationalAgeAtBirthWeeks: 33, gestationalAgeAtBirthDays: 2 } : { growthReference: 'auto', scheduleId: 'us-routine' }
    const child = await created(app, owner, '/api/children', { name, dateOfBirth: birth, sex: name === 'Zoë' ? 'female' : 'male', familyId: family.id, ...preterm })
    const base = `/api/children/${child.id}`
    const year = Number(birth.slice(0, 4))
    const wellness = await created(app, owner, `${base}/visits`, { date: `${year + 1}-03-01`, type: 'wellness', provider: 'Dr. Osei', notes: 'Check; all fine', measurement: { heightCm: 76.4, weightKg: 10.125 } })
    const sick = await created(app, owner, `${base}/visits`, { date: `${year + 1}-01-10`, type: 'sick' })
    // The first DTaP dose was given at a visit of its own: a record links only to a visit on or before its date.
    const shot = await created(app, owner, `${base}/visits`, { date: `${year}-09-01`, type: 'wellness' })
    const early = await created(app, owner, `${base}/measurements`, { measuredAt: birth, heightCm: 50.2, weightKg: 3.456, headCircumferenceCm: 34.5, notes: 'At birth' })
    await created(app, owner, `${base}/measurements`, { measuredAt: `${year + 1}-06-01`, weightKg: 10.2, visitId: sick.id })
    await created(app, owner, `${base}/medical-events`, { date: `${year}-09-01`, type: 'vaccine', name: 'DTaP', visitId: shot.id, doseNumber: 1, lotNumber: 'Lot «Ø-7»', site: 'Left thigh', nextDueDate: `${year}-11-01`, ...(name === 'Ari' ? { vaccine: 'DTaP' } : {}) })
    await created(app, owner, `${base}/medical-events`, { date: `${year + 1}-01-10`, type: 'medication', name: 'Amoxicillin', description: 'Twice a day' })
    const flu = await created(app, owner, `${base}/illnesses`, { startDate: `${year + 1}-01-08`, endDate: `${year + 1}-01-15`, diagnosis: 'Influenza', symptoms: 'Fever', temperatureC: 39.25, visitId: sick.id })
    await created(app, owner, `${base}/illnesses`, { startDate: `${year + 1}-03-01`, diagnosis: 'Cold' })
    // Readings of the flu: the highest goes above the temperature noted with it.
    await created(app, owner, `/api/illnesses/${flu.id}/temperatures`, { takenAt: `${year + 1}-01-09T18:00:00Z`, temperatureC: 38.2 })
    await created(app, owner, `/api/illnesses/${flu.id}/temperatures`, { takenAt: `${year + 1}-01-08T07:30:00+01:00`, temperatureC: 39.6, method: 'rectal', notes: 'At night' })
    for (const [file, fileName, type, fields] of [
      [pdf(), 'report – März.pdf', 'application/pdf', { visitId: wellness.id, measurementId: wellness.measurement.id }],
      [pdf(5000), 'flu.pdf', 'application/pdf', { illnessId: flu.id }],
      [await sharp({ create: { width: 16, height: 16, channels: 3, background: '#a63' } }).png().toBuffer(), 'birth.png', 'image/png', { measurementId: early.id }]
    ] as const) {
      const res = await upload(app, owner, `${base}/attachments`, file, fileName, type, fields)
      if (res.statusCode !== 201) throw new Error(`upload answered ${res.statusCode}: ${res.body}`)
    }
    const avatar = await sharp({ create: { width: 40, height: 40, channels: 3, background: '#36a' } }).png().toBuffer()
    const res = await upload(app, owner, `${base}/avatar`, avatar, 'me.png', 'image/png')
    if (res.statusCode !== 200 && res.statusCode !== 201) throw new Error(`avatar answered ${res.statusCode}: ${res.body}`)
  }
  return family.id
}

export async function exported (app: App, owner: Pair, familyId: number): Promise<Buffer> {
  const res = await call(app, owner, 'GET', `/api/families/${familyId}/export`)
  if (res.statusCode !== 200) throw new Error(`export answered ${res.statusCode}`)
  return res.rawPayload
}

/** A new owner's family of every kind of record, made through the routes of `app`, and its archive. */
export async function exportedFamily (app: App): Promise<{ owner: Pair, familyId: number, archive: Buffer }> {
  const owner = await register(app)
  const familyId = await richFamily(app, owner)
  return { owner, familyId, archive: await exported(app, owner, familyId) }
}

export function importArchive (app: App, pair: Pair | null, zip: Buffer, type = 'application/zip') {
  const { payload, headers } = form([part(zip, 'family.zip', type)])
  return call(app, pair, 'POST', '/api/families/import', payload, headers)
}

/**
 * An archive imported into a fresh app by a new user: the app, the importer,
 * the import's counts and the one child it made.
 */
export async function importedChild (t: Test, archive: Buffer, env: Record<string, string>) {
  const target = await build(t, { env })
  const importer = await register(target)
  const imported = await importArchive(target, importer, archive)
  t.equal(imported.statusCode, 201, imported.body)
  const [child] = (await call(target, importer, 'GET', `/api/children?familyId=${imported.json().family.id as number}`)).json().data
  return { target, importer, familyId: imported.json().family.id as number, counts: imported.json().counts as Record<string, number>, child: child as { id: number } }
}

// ---- archives taken apart and put together again ----

export function unzip (buffer: Buffer): Promise<Map<string, Buffer>> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(buffer, { lazyEntries: true }, (error, zip) => {
      if (error !== null && error !== undefined) return reject(error)
      const entries = new Map<string, Buffer>()
      zip.on('error', reject)
      zip.on('entry', (entry: yauzl.Entry) => {
        zip.openReadStream(entry, (err, stream) => {
          if (err !== null && err !== undefined) return reject(err)
          const chunks: Buffer[] = []
          stream.on('data', chunk => chunks.push(chunk))
          stream.on('error', reject)
          stream.on('end', () => {
            entries.set(entry.fileName, Buffer.concat(chunks))
            zip.readEntry()
          })
        })
      })
      zip.on('end', () => resolve(entries))
      zip.readEntry()
    })
  })
}

export function sha256 (bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex')
}

export function zip (entries: Map<string, Buffer> | Array<[string, Buffer]>, compress = true): Promise<Buffer> {
  const file = new ZipFile()
  for (const [name, bytes] of entries) file.addBuffer(bytes, name, { compress })
  file.end()
  const chunks: Buffer[] = []
  return new Promise((resolve, reject) => {
    file.outputStream.on('data', (chunk: Buffer) => chunks.push(chunk))
    file.outputStream.on('end', () => resolve(Buffer.concat(chunks)))
    file.outputStream.on('error', reject)
  })
}

/** The archive with its entries changed by `edit`, and its manifest's sums made to match again unless `keepSums`. */
export async function rebuilt (archive: Buffer, edit: (entries: Map<string, Buffer>, manifest: Json, family: Json) => void, keepSums = false): Promise<Buffer> {
  const entries = await unzip(archive)
  const manifest = JSON.parse((entries.get('manifest.json') as Buffer).toString())
  const family = JSON.parse((entries.get('family.json') as Buffer).toString())
  edit(entries, manifest, family)
  if (entries.has('family.json')) entries.set('family.json', Buffer.from(JSON.stringify(family)))
  if (!keepSums) {
    manifest.files = [...entries].filter(([name]) => name !== 'manifest.json').map(([name, bytes]) => ({ path: name, size: bytes.length, sha256: sha256(bytes) }))
  }
  if (entries.has('manifest.json')) entries.set('manifest.json', Buffer.from(JSON.stringify(manifest)))
  return zip(entries)
}

// ---- what a family reads back as, apart from ids and timestamps ----

export async function fileSum (app: App, url: string): Promise<string> {
  const res = await app.inject({ method: 'GET', url })
  if (res.statusCode !== 200) throw new Error(`GET ${url} answered ${res.statusCode}`)
  return sha256(res.rawPayload)
}

/** A child's whole record through the API, links as positions in their lists and files as their SHA-256. */
export async function childView (app: App, pair: Pair, childId: number): Promise<Json> {
  const get = async (url: string): Promise<Json> => {
    const res = await call(app, pair, 'GET', url)
    if (res.statusCode !== 200) throw new Error(`GET ${url} answered ${res.statusCode}`)
    return res.json()
  }
  const child = await get(`/api/children/${childId}`)
  const lists: Record<string, Json[]> = {}
  for (const kind of ['measurements', 'visits', 'medical-events', 'illnesses', 'attachments']) {
    lists[kind] = (await get(`/api/children/${childId}/${kind}?limit=1000`)).data
  }
  lists.temperatures = []
  for (const illness of lists.illnesses) lists.temperatures.push(...(await get(`/api/illnesses/${illness.id}/temperatures?limit=1000`)).data)
  const position = (kind: string, id: number | null): number | null => id === null ? null : lists[kind].findIndex(item => item.id === id)
  const strip = (item: Json): Json => {
    const { id, childId: _c, createdAt, updatedAt, version, ...rest } = item
    if ('visitId' in rest) rest.visitId = position('visits', rest.visitId)
    if ('measurementId' in rest) rest.measurementId = position('measurements', rest.measurementId)
    if ('illnessId' in rest) rest.illnessId = position('illnesses', rest.illnessId)
    return rest
  }
  const view: Json = {
    name: child.name,
    dateOfBirth: child.dateOfBirth,
    sex: child.sex,
    gestationalAgeAtBirthWeeks: child.gestationalAgeAtBirthWeeks,
    gestationalAgeAtBirthDays: child.gestationalAgeAtBirthDays,
    growthReference: child.growthReference,
    scheduleId: child.scheduleId
  }
  view.avatar = child.avatarUrl === null ? null : await fileSum(app, child.avatarUrl)
  for (const [kind, items] of Object.entries(lists)) {
    view[kind] = await Promise.all(items.map(async item => {
      const out = strip(item)
      if (kind === 'attachments') out.url = await fileSum(app, item.url)
      return out
    }))
  }
  view.due = (await get(`/api/children/${childId}/due?limit=1000`)).data.map((item: Json) => ({ ...item, lastDose: item.lastDose === null ? null : { ...item.lastDose, id: position('medical-events', item.lastDose.id) } }))
  const growth = await call(app, pair, 'GET', `/api/children/${childId}/growth`)
  view.growth = growth.statusCode === 200 ? (growth.json() as Json).points.map(strip) : growth.statusCode
  return view
}

export async function familyView (app: App, pair: Pair, familyId: number): Promise<Json> {
  const family = (await call(app, pair, 'GET', `/api/families/${familyId}`)).json()
  const children = (await call(app, pair, 'GET', `/api/children?familyId=${familyId}`)).json().data
  return { name: family.name, childCount: family.childCount, children: await Promise.all(children.map((child: Json) => childView(app, pair, child.id))) }
}

/** What must not be left by a refused import: rows, and files of any kind in the file folders. */
export async function footprint (app: App): Promise<Json> {
  const [rows] = await app.db.sql`
    select (select count(*) from families)::int as families, (select count(*) from children)::int as children,
           (select count(*) from measurements)::int as measurements, (select count(*) from attachments)::int as attachments,
           (select count(*) from changes)::int as changes
  `
  return { ...rows, uploads: readdirSync(app.config.uploadDir).sort(), avatars: readdirSync(app.config.avatarDir).sort() }
}

/** The command line started in a process of its own with exactly the given environment, and its end. */
export function startCli (args: string[], env: Record<string, string>): { child: ChildProcess, done: Promise<Run> } {
  const { child, exited } = startNode('cli.ts', args, env)
  return { child, done: exited }
}


/**
 * A ZIP archive of empty stored entries, written directly: many thousands of
 * entries in a moment, with the ZIP64 end records that more than 65,535 need.
 */
export function emptyEntries (names: string[]): Buffer {
  const locals: Buffer[] = []
  const centrals: Buffer[] = []
  let offset = 0
  for (const name of names) {
    const bytes = Buffer.from(name)
    const local = Buffer.alloc(30)
    local.writeUInt32LE(0x04034b50, 0)
    local.writeUInt16LE(20, 4)
    local.writeUInt16LE(0x21, 12)
    local.writeUInt16LE(bytes.length, 26)
    const central = Buffer.alloc(46)
    central.writeUInt32LE(0x02014b50, 0)
    central.writeUInt16LE(20, 4)
    central.writeUInt16LE(20, 6)
    central.writeUInt16LE(0x21, 14)
    central.writeUInt16LE(bytes.length, 28)
    central.writeUInt32LE(offset, 42)
    locals.push(local, bytes)
    centrals.push(central, bytes)
    offset += local.length + bytes.length
  }
  const directory = Buffer.concat(centrals)
  const record = Buffer.alloc(56)
  record.writeUInt32LE(0x06064b50, 0)
  record.writeBigUInt64LE(44n, 4)
  record.writeUInt16LE(45, 12)
  record.writeUInt16LE(45, 14)
  record.writeBigUInt64LE(BigInt(names.length), 24)
  record.writeBigUInt64LE(BigInt(names.length), 32)
  record.writeBigUInt64LE(BigInt(directory.length), 40)
  record.writeBigUInt64LE(BigInt(offset), 48)
  const locator = Buffer.alloc(20)
  locator.writeUInt32LE(0x07064b50, 0)
  locator.writeBigUInt64LE(BigInt(offset + directory.length), 8)
  locator.writeUInt32LE(1, 16)
  const end = Buffer.alloc(22)
  end.writeUInt32LE(0x06054b50, 0)
  end.writeUInt16LE(Math.min(names.length, 0xffff), 8)
  end.writeUInt16LE(Math.min(names.length, 0xffff), 10)
  end.writeUInt32LE(directory.length, 12)
  end.writeUInt32LE(offset, 16)
  return Buffer.concat([...locals, directory, record, locator, end])
}
