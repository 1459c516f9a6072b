import t from 'tap'
import { spawn } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { readdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import sharp from 'sharp'
import yauzl from 'yauzl'
import { ZipFile } from 'yazl'
import { build, bearer, register, tempDir, TEST_ENV, type Pair } from './helper'

type App = Awaited<ReturnType<typeof build>>
type Json = any

const OPEN = { REGISTRATION: 'open' }

function call (app: App, pair: Pair | null, url: string, method = 'GET', payload?: unknown) {
  return app.inject({
    method: method as 'GET',
    url,
    headers: pair === null ? {} : bearer(pair.accessToken),
    ...(payload === undefined ? {} : { payload: payload as object })
  })
}

async function created (app: App, pair: Pair, url: string, payload: unknown): Promise<Json> {
  const res = await call(app, pair, url, 'POST', payload)
  if (res.statusCode !== 201) throw new Error(`POST ${url} answered ${res.statusCode}: ${res.body}`)
  return res.json()
}

function multipart (file: Buffer, fileName: string, type: string, fields: Record<string, string | number> = {}): { payload: Buffer, headers: Record<string, string> } {
  const boundary = `----import${randomBytes(8).toString('hex')}`
  const parts = Object.entries(fields).map(([name, value]) => Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`))
  const payload = Buffer.concat([
    ...parts,
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${fileName}"\r\nContent-Type: ${type}\r\n\r\n`),
    file,
    Buffer.from(`\r\n--${boundary}--\r\n`)
  ])
  return { payload, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } }
}

async function upload (app: App, pair: Pair, url: string, file: Buffer, fileName: string, type: string, fields: Record<string, string | number> = {}) {
  const { payload, headers } = multipart(file, fileName, type, fields)
  return app.inject({ method: 'POST', url, payload, headers: { ...headers, ...bearer(pair.accessToken) } })
}

function pdf (size = 3000): Buffer {
  return Buffer.concat([Buffer.from('%PDF-1.4\n'), randomBytes(size), Buffer.from('\n%%EOF\n')])
}

/** A family with two children and every kind of record, link and file, made through the real routes. */
async function richFamily (app: App, owner: Pair): Promise<number> {
  const family = await created(app, owner, '/api/families', { name: 'Família Ødegård, "the first"' })
  for (const [name, birth] of [['Zoë', '2021-03-01'], ['Ari', '2023-07-15']]) {
    const child = await created(app, owner, '/api/children', { name, dateOfBirth: birth, sex: name === 'Zoë' ? 'female' : 'male', familyId: family.id })
    const base = `/api/children/${child.id}`
    const year = Number(birth.slice(0, 4))
    const wellness = await created(app, owner, `${base}/visits`, { date: `${year + 1}-03-01`, type: 'wellness', provider: 'Dr. Osei', notes: 'Check; all fine', measurement: { heightCm: 76.4, weightKg: 10.125 } })
    const sick = await created(app, owner, `${base}/visits`, { date: `${year + 1}-01-10`, type: 'sick' })
    const early = await created(app, owner, `${base}/measurements`, { measuredAt: birth, heightCm: 50.2, weightKg: 3.456, headCircumferenceCm: 34.5, notes: 'At birth' })
    await created(app, owner, `${base}/measurements`, { measuredAt: `${year + 1}-06-01`, weightKg: 10.2, visitId: sick.id })
    await created(app, owner, `${base}/medical-events`, { date: `${year}-09-01`, type: 'vaccine', name: 'DTaP', visitId: sick.id })
    await created(app, owner, `${base}/medical-events`, { date: `${year + 1}-01-10`, type: 'medication', name: 'Amoxicillin', description: 'Twice a day' })
    const flu = await created(app, owner, `${base}/illnesses`, { startDate: `${year + 1}-01-08`, endDate: `${year + 1}-01-15`, diagnosis: 'Influenza', symptoms: 'Fever', temperatureC: 39.25, visitId: sick.id })
    await created(app, owner, `${base}/illnesses`, { startDate: `${year + 1}-03-01`, diagnosis: 'Cold' })
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

async function exported (app: App, owner: Pair, familyId: number): Promise<Buffer> {
  const res = await call(app, owner, `/api/families/${familyId}/export`)
  if (res.statusCode !== 200) throw new Error(`export answered ${res.statusCode}`)
  return res.rawPayload
}

function importArchive (app: App, pair: Pair | null, zip: Buffer, type = 'application/zip') {
  const { payload, headers } = multipart(zip, 'family.zip', type)
  return app.inject({ method: 'POST', url: '/api/families/import', payload, headers: { ...headers, ...(pair === null ? {} : bearer(pair.accessToken)) } })
}

// ---- archives taken apart and put together again ----

function unzip (buffer: Buffer): Promise<Map<string, Buffer>> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(buffer, { lazyEntries: true }, (error, zip) => {
      if (error !== null && error !== undefined) return reject(error)
      const entries = new Map<string, Buffer>()
      zip.on('entry', (entry: yauzl.Entry) => {
        zip.openReadStream(entry, (err, stream) => {
          if (err !== null && err !== undefined) return reject(err)
          const chunks: Buffer[] = []
          stream.on('data', chunk => chunks.push(chunk))
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

function sha256 (bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex')
}

function zip (entries: Map<string, Buffer> | Array<[string, Buffer]>, compress = true): Promise<Buffer> {
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
async function rebuilt (archive: Buffer, edit: (entries: Map<string, Buffer>, manifest: Json, family: Json) => void, keepSums = false): Promise<Buffer> {
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

async function fileSum (app: App, url: string): Promise<string> {
  const res = await app.inject({ method: 'GET', url })
  if (res.statusCode !== 200) throw new Error(`GET ${url} answered ${res.statusCode}`)
  return sha256(res.rawPayload)
}

/** A child's whole record through the API, links as positions in their lists and files as their SHA-256. */
async function childView (app: App, pair: Pair, childId: number): Promise<Json> {
  const get = async (url: string): Promise<Json> => {
    const res = await call(app, pair, url)
    if (res.statusCode !== 200) throw new Error(`GET ${url} answered ${res.statusCode}`)
    return res.json()
  }
  const child = await get(`/api/children/${childId}`)
  const lists: Record<string, Json[]> = {}
  for (const kind of ['measurements', 'visits', 'medical-events', 'illnesses', 'attachments']) {
    lists[kind] = (await get(`/api/children/${childId}/${kind}?limit=1000`)).data
  }
  const position = (kind: string, id: number | null): number | null => id === null ? null : lists[kind].findIndex(item => item.id === id)
  const strip = (item: Json): Json => {
    const { id, childId: _c, createdAt, updatedAt, version, ...rest } = item
    if ('visitId' in rest) rest.visitId = position('visits', rest.visitId)
    if ('measurementId' in rest) rest.measurementId = position('measurements', rest.measurementId)
    if ('illnessId' in rest) rest.illnessId = position('illnesses', rest.illnessId)
    return rest
  }
  const view: Json = { name: child.name, dateOfBirth: child.dateOfBirth, sex: child.sex }
  view.avatar = child.avatarUrl === null ? null : await fileSum(app, child.avatarUrl)
  for (const [kind, items] of Object.entries(lists)) {
    view[kind] = await Promise.all(items.map(async item => {
      const out = strip(item)
      if (kind === 'attachments') out.url = await fileSum(app, item.url)
      return out
    }))
  }
  const growth = await call(app, pair, `/api/children/${childId}/growth`)
  view.growth = growth.statusCode === 200 ? (growth.json() as Json).points.map(strip) : growth.statusCode
  return view
}

async function familyView (app: App, pair: Pair, familyId: number): Promise<Json> {
  const family = (await call(app, pair, `/api/families/${familyId}`)).json()
  const children = (await call(app, pair, `/api/children?familyId=${familyId}`)).json().data
  return { name: family.name, childCount: family.childCount, children: await Promise.all(children.map((child: Json) => childView(app, pair, child.id))) }
}

/** What must not be left by a refused import: rows, and files of any kind in the file folders. */
async function footprint (app: App): Promise<Json> {
  const [rows] = await app.db.sql`
    select (select count(*) from families)::int as families, (select count(*) from children)::int as children,
           (select count(*) from measurements)::int as measurements, (select count(*) from attachments)::int as attachments,
           (select count(*) from changes)::int as changes
  `
  return { ...rows, uploads: readdirSync(app.config.uploadDir).sort(), avatars: readdirSync(app.config.avatarDir).sort() }
}

t.test('a family exported from one instance reads back equal once imported into another', async t => {
  const source = await build(t, { env: OPEN })
  const owner = await register(source)
  const familyId = await richFamily(source, owner)
  const archive = await exported(source, owner, familyId)

  const target = await build(t, { env: OPEN })
  const importer = await register(target)
  const res = await importArchive(target, importer, archive)
  t.equal(res.statusCode, 201, res.body)
  const answer = res.json()
  t.same(answer.counts, { children: 2, measurements: 6, visits: 4, medicalEvents: 4, illnesses: 4, attachments: 6, files: 8 })
  t.equal(answer.family.name, 'Família Ødegård, "the first"')
  t.equal(answer.family.role, 'owner')
  t.equal(answer.family.memberCount, 1, 'the importer is its only member')
  t.equal(res.headers.location, `/api/families/${answer.family.id}`)

  const before = await familyView(source, owner, familyId)
  const after = await familyView(target, importer, answer.family.id)
  t.ok(before.children.every((child: Json) => Array.isArray(child.growth) && child.growth.length > 0), 'the growth answers have points')
  t.same(after, before, 'every child, record, link, file byte and growth answer is the same')

  const changes = await target.db.sql`select kind, op, user_id from changes where family_id = ${answer.family.id}`
  const records = changes.filter(change => !['family', 'member'].includes(change.kind as string))
  t.equal(records.length, 2 + 6 + 4 + 4 + 4 + 6, 'one change for each row written')
  t.ok(records.every(change => change.op === 'created' && change.user_id === importer.user.id), 'each a creation by the importer')

  const feed = await call(target, importer, `/api/families/${answer.family.id}/changes`)
  t.equal(feed.statusCode, 200, 'the changes feed of the new family answers')

  const again = await importArchive(target, importer, archive)
  t.equal(again.statusCode, 201, 'the same archive imports again, as another family')
  t.not(again.json().family.id, answer.family.id)
  const sums = new Set((await target.db.sql`select stored_name from attachments`).map(row => row.stored_name))
  t.equal(sums.size, 12, 'each import stores its files under names of its own')

  const stranger = await register(target)
  t.equal((await call(target, stranger, `/api/families/${answer.family.id}`)).statusCode, 403, 'the new family is the importer\'s alone')
})

t.test('hostile and broken archives are refused, naming the problem, with nothing left behind', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const familyId = await richFamily(app, owner)
  const archive = await exported(app, owner, familyId)
  const entries = await unzip(archive)
  const someFile = [...entries.keys()].find(name => name.startsWith('files/') && name.endsWith('.pdf')) as string
  const lastMigration = JSON.parse((entries.get('manifest.json') as Buffer).toString()).schemaVersion as string

  const bomb = await zip([['files/aaaaaaaaaaaaaaaa.pdf', Buffer.alloc(20 * 1024 * 1024)], ['family.json', Buffer.from('{}')]])
  const traversal = await (async () => {
    const made = await zip([['xx/evil.json', Buffer.from('{}')], ...entries])
    // The same length of name, so the archive stays well-formed around it.
    const name = Buffer.from('xx/evil.json')
    let at = made.indexOf(name)
    while (at !== -1) {
      Buffer.from('../evil.json').copy(made, at)
      at = made.indexOf(name, at + 1)
    }
    return made
  })()
  const many = await zip(Array.from({ length: 100_001 }, (_, index) => [`fhir/${index + 1}.json`, Buffer.alloc(0)] as [string, Buffer]), false)

  const cases: Array<[string, Buffer, RegExp]> = [
    ['a zip bomb', bomb, /would unpack to more than 4 × its size/],
    ['an entry that climbs out', traversal, /an entry's name is not a safe path inside the archive \(invalid relative path: \.\.\/evil\.json\)/],
    ['an unexpected entry', await rebuilt(archive, found => { found.set('notes.txt', Buffer.from('hello')) }), /"notes\.txt" is not one an export writes/],
    ['more than 100,000 entries', many, /100001 entries, more than 100000/],
    ['a newer schema version', await rebuilt(archive, (_found, manifest) => { manifest.schemaVersion = '99991231-235959-later.sql' }), /newer than this service's/],
    ['a truncated archive', archive.subarray(0, Math.floor(archive.length * 0.6)), /not a complete ZIP archive/],
    ['a file changed after export', await rebuilt(archive, found => { const bytes = Buffer.from(found.get(someFile) as Buffer); bytes[bytes.length - 20] ^= 1; found.set(someFile, bytes) }, true), /SHA-256 of files\/.* does not match the manifest/],
    ['a file missing', await rebuilt(archive, found => { found.delete(someFile) }), /names files\/.*, which the archive does not hold/],
    ['an entry left out of the manifest', await rebuilt(archive, found => { found.set('fhir/999.json', Buffer.from('{}')) }, true), /fhir\/999\.json is not in the manifest/],
    ['no manifest', await rebuilt(archive, found => { found.delete('manifest.json') }), /no manifest\.json/],
    ['a manifest that is not JSON', await (async () => { const copy = new Map(entries); copy.set('manifest.json', Buffer.from('{nope')); return zip(copy) })(), /manifest\.json is not valid JSON/],
    ['a record out of range', await rebuilt(archive, (_found, _manifest, family) => { family.children[1].measurements[2].heightCm = 999 }), /children\[1\]\.measurements\[2\]: heightCm must be <= 250/],
    ['a record before the child\'s birth', await rebuilt(archive, (_found, _manifest, family) => { family.children[0].visits[0].date = '2001-01-01' }), /children\[0\]\.visits\[0\]: date must not be before the child's date of birth/],
    ['a link to a visit the child does not have', await rebuilt(archive, (_found, _manifest, family) => { family.children[0].illnesses[0].visitId = 777777 }), /visitId names no record of the child/],
    ['a file whose bytes are not its type', await rebuilt(archive, found => { found.set(someFile, Buffer.from('<html><script>alert(1)</script></html>')) }), /content of files\/.* is not application\/pdf/],
    ['a text the database cannot hold', await rebuilt(archive, (_found, _manifest, family) => { family.children[1].attachments[0].fileName = 'bad\u0000name.pdf' }), /the database refuses/],
    ['family.json of another schema version than the manifest', await rebuilt(archive, (_found, _manifest, family) => { family.schemaVersion = '00000000-000000-base-schema.sql' }), /different schema versions/]
  ]
  const before = await footprint(app)
  for (const [what, bytes, message] of cases) {
    const res = await importArchive(app, owner, bytes)
    t.equal(res.statusCode, 400, `${what}: 400`)
    t.equal(res.json().code, 'INVALID_ARCHIVE', `${what}: INVALID_ARCHIVE`)
    t.match(res.json().error, message, `${what}: ${res.json().error}`)
    t.same(await footprint(app), before, `${what}: no row and no file remains`)
  }
  t.ok(lastMigration.length > 0)

  const notZip = await importArchive(app, owner, await sharp({ create: { width: 8, height: 8, channels: 3, background: '#000' } }).png().toBuffer())
  t.equal(notZip.statusCode, 415, 'a file that is not a ZIP archive is refused by its type')
  t.equal(notZip.json().code, 'UNSUPPORTED_MEDIA_TYPE')
  t.equal((await importArchive(app, null, archive)).statusCode, 401, 'no token: 401')
  t.same(await footprint(app), before, 'nothing remains of any of them')
})

t.test('an archive larger than MAX_IMPORT_SIZE is refused while it arrives', async t => {
  const app = await build(t, { env: { ...OPEN, MAX_IMPORT_SIZE: '10000' } })
  const owner = await register(app)
  const res = await importArchive(app, owner, await zip([['family.json', randomBytes(20000)]], false))
  t.equal(res.statusCode, 413)
  t.equal(res.json().code, 'PAYLOAD_TOO_LARGE')
  t.same(readdirSync(app.config.uploadDir), [], 'its temporary file is gone')
})

t.test('the command line imports an archive for a user named by e-mail', async t => {
  const source = await build(t, { env: OPEN })
  const owner = await register(source)
  const familyId = await richFamily(source, owner)
  const dir = tempDir(t)
  const file = path.join(dir, 'family.zip')
  const archive = await exported(source, owner, familyId)
  writeFileSync(file, archive)

  const target = await build(t, { env: OPEN })
  const importer = await register(target)
  const env = { ...TEST_ENV, DATABASE_URL: target.db.url, UPLOAD_DIR: target.config.uploadDir, AVATAR_DIR: target.config.avatarDir }
  const run = await cli(['import', '--in', file, '--owner', importer.user.email.toUpperCase()], env)
  t.equal(run.code, 0, run.stderr)
  t.match(run.stdout, /^imported the family "Família Ødegård, \\"the first\\"" \(id \d+\) for .+: 2 children, 24 records, 8 files\n$/)
  const [{ id }] = await target.db.sql`select m.family_id as id from family_members m join families f on f.id = m.family_id where m.user_id = ${importer.user.id} and f.name like 'Fam%lia%'`
  t.same(await familyView(target, importer, id as number), await familyView(source, owner, familyId), 'it reads back equal')
  const [{ users }] = await target.db.sql`select count(distinct user_id)::int as users from changes where family_id = ${id as number} and kind = 'child'`
  t.equal(users, 0, 'its changes are recorded for no user, as the command line\'s are')

  const before = await footprint(target)
  const broken = path.join(dir, 'broken.zip')
  writeFileSync(broken, archive.subarray(0, 1000))
  for (const [args, pattern] of [
    [['import', '--in', broken, '--owner', importer.user.email], /^the archive cannot be imported: the file is not a complete ZIP archive/],
    [['import', '--in', path.join(dir, 'none.zip'), '--owner', importer.user.email], /^there is no file /],
    [['import', '--in', file, '--owner', 'nobody@example.org'], /^no user has the e-mail nobody@example.org$/],
    [['import', '--in', file], /^--owner is required$/]
  ] as Array<[string[], RegExp]>) {
    const refused = await cli(args, env)
    t.not(refused.code, 0, `${args.join(' ')}: a non-zero exit`)
    const lines = refused.stderr.split('\n').filter(line => line.trim() !== '' && !line.includes('ExperimentalWarning') && !line.includes('--trace-warnings'))
    t.equal(lines.length, 1, 'one line')
    t.match(lines[0], pattern, lines[0])
  }
  t.same(await footprint(target), before, 'the refused imports left nothing')
})

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs the command line in a process of its own with exactly the given environment. */
function cli (args: string[], env: Record<string, string>): Promise<Run> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, '..', 'cli.ts'), ...args], {
    cwd: path.join(__dirname, '..'),
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const run: Run = { code: null, stdout: '', stderr: '' }
  child.stdout.on('data', chunk => { run.stdout += chunk })
  child.stderr.on('data', chunk => { run.stderr += chunk })
  return new Promise(resolve => child.on('exit', code => { run.code = code; resolve(run) }))
}
