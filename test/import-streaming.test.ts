import t from 'tap'
import sharp from 'sharp'
import { build, call } from './helper'
import {
  created, exported, exportedFamily, footprint, importArchive, OPEN, pdf, rebuilt, sha256, unzip, upload, zip, type App, type Json
} from './import-helpers'
import type { Pair } from './helper'

interface Source {
  app: App
  owner: Pair
  familyId: number
  archive: Buffer
  entries: Map<string, Buffer>
}

let made: Promise<Source> | undefined

/** One family made through the routes and exported, for every test here; its app imports too. */
function shared (): Promise<Source> {
  made ??= (async () => {
    const app = await build(t, { env: OPEN })
    const family = await exportedFamily(app)
    return { app, ...family, entries: await unzip(family.archive) }
  })()
  return made
}

/** The archive with `family.json` replaced by `document` as it is, stored uncompressed, and the manifest's sums made to match. */
async function withDocument (entries: Map<string, Buffer>, document: Buffer): Promise<Buffer> {
  const copy = new Map(entries)
  copy.set('family.json', document)
  const manifest = JSON.parse((copy.get('manifest.json') as Buffer).toString())
  manifest.files = [...copy].filter(([name]) => name !== 'manifest.json').map(([name, bytes]) => ({ path: name, size: bytes.length, sha256: sha256(bytes) }))
  copy.set('manifest.json', Buffer.from(JSON.stringify(manifest)))
  return zip(copy, false)
}

t.test('a hostile family.json is refused at its first wrong token, without being held in memory', async t => {
  const { app, owner, entries } = await shared()
  // About 30 MB of empty arrays under a key no export writes; parsed whole, it takes hundreds of megabytes.
  const hostile = Buffer.concat([Buffer.from('{"x":['), Buffer.alloc(3 * 10_000_000, '[],'), Buffer.from('[]]}')])
  const archive = await withDocument(entries, hostile)
  const before = await footprint(app)
  global.gc?.()
  const baseline = process.memoryUsage().heapUsed
  let peak = baseline
  const sampler = setInterval(() => { peak = Math.max(peak, process.memoryUsage().heapUsed) }, 2)
  const res = await importArchive(app, owner, archive)
  clearInterval(sampler)
  t.equal(res.statusCode, 400)
  t.equal(res.json().code, 'INVALID_ARCHIVE')
  t.match(res.json().error, /family\.json: x is not part of a family archive/)
  t.ok(peak - baseline < 64 * 1024 * 1024, `the heap grew by ${Math.round((peak - baseline) / 1024 / 1024)} MB, less than 64 MB`)
  t.same(await footprint(app), before, 'nothing remains')
})

t.test('every part of family.json has its shape, checked as it streams', async t => {
  const { app, owner, entries } = await shared()
  const family = JSON.parse((entries.get('family.json') as Buffer).toString())
  const text = (edit: (document: Json) => void): Buffer => {
    const copy = structuredClone(family)
    edit(copy)
    return Buffer.from(JSON.stringify(copy))
  }
  const cases: Array<[string, Buffer, RegExp]> = [
    ['children that are not objects', text(document => { document.children = [[], []] }), /family\.json: children\[0\] must be an object/],
    ['a list of records that is not a list', text(document => { document.children[0].visits = {} }), /family\.json: children\[0\]\.visits must be an array/],
    ['a record that is not an object', text(document => { document.children[1].measurements[0] = 7 }), /children\[1\]\.measurements\[0\]: must be object/],
    ['a text past its bound', text(document => { document.children[0].visits[0].notes = 'x'.repeat(50_000) }), /family\.json has a text longer than 40000 characters/],
    ['a record of too many fields', text(document => { for (let i = 0; i < 200; i += 1) document.children[0].visits[0][`f${i}`] = i }), /has an object of more than 100 keys/],
    ['values nested past the bound', text(document => { let deep: Json = 1; for (let i = 0; i < 20; i += 1) deep = [deep]; document.children[0].growth = { points: deep } }), /nests values more than 8 deep/],
    ['a list that appears twice', Buffer.from(JSON.stringify(family).replace('"visits":[', '"visits":[],"visits":[')), /children\[0\]: visits appears twice/],
    ['records before their child', Buffer.from(JSON.stringify(family).replace(/"child":(\{[^}]*\}),("measurements")/, '$2')), /children\[0\]: measurements comes before child|children\[0\]: child is required/],
    ['a part no export writes', text(document => { document.children[0].secrets = [] }), /children\[0\]: secrets is not part of a child's record/],
    ['a list missing', text(document => { delete document.children[1].illnesses }), /children\[1\]: illnesses is required/],
    ['more after the document', Buffer.concat([text(() => {}), Buffer.from(' {}')]), /family\.json is not valid JSON/],
    ['a document cut short', text(() => {}).subarray(0, 2000), /family\.json (is not valid JSON|ends before its last value)/],
    ['a repeated id', text(document => { document.children[0].visits[1].id = document.children[0].visits[0].id }), /children\[0\]\.visits\[1\]: the id \d+ appears twice/]
  ]
  const before = await footprint(app)
  for (const [what, document, message] of cases) {
    const res = await importArchive(app, owner, await withDocument(entries, document))
    t.equal(res.statusCode, 400, `${what}: 400`)
    t.match(res.json().error, message, `${what}: ${res.json().error}`)
    t.same(await footprint(app), before, `${what}: nothing remains`)
  }
  const manifest = JSON.parse((entries.get('manifest.json') as Buffer).toString())
  const hostileManifest = new Map(entries)
  hostileManifest.set('manifest.json', Buffer.from(JSON.stringify({ ...manifest, x: [[], []] })))
  const res = await importArchive(app, owner, await zip(hostileManifest))
  t.equal(res.statusCode, 400, 'the manifest is read as it streams too')
  t.match(res.json().error, /manifest\.json: x is not part of a manifest/)
})

t.test('records keep their order through an archive, ties included', async t => {
  const { app, owner } = await shared()
  const family = await created(app, owner, '/api/families', { name: 'Ties' })
  const child = await created(app, owner, '/api/children', { name: 'Noa', dateOfBirth: '2022-01-01', sex: 'female', familyId: family.id })
  const base = `/api/children/${child.id}`
  const first = await created(app, owner, `${base}/measurements`, { measuredAt: '2023-01-01', weightKg: 10.12 })
  const second = await created(app, owner, `${base}/measurements`, { measuredAt: '2023-01-01', weightKg: 10.03 })
  await created(app, owner, `${base}/measurements`, { measuredAt: '2023-01-01', weightKg: 10.07 })
  const flu = await created(app, owner, `${base}/illnesses`, { startDate: '2023-02-01', diagnosis: 'Flu' })
  for (const temperatureC of [38.1, 38.4]) await created(app, owner, `/api/illnesses/${flu.id}/temperatures`, { takenAt: '2023-02-01T08:00:00Z', temperatureC })
  for (const name of ['b.pdf', 'a.pdf']) await upload(app, owner, `${base}/attachments`, pdf(), name, 'application/pdf')
  // A write whose transaction began first may commit after a later one: its row has the higher id and the earlier timestamp.
  await app.db.sql`update measurements set created_at = created_at - interval '1 hour' where id = ${second.id}`
  await app.db.sql`update measurements set created_at = created_at + interval '1 hour' where id = ${first.id}`

  const archive = await exported(app, owner, family.id)
  const res = await importArchive(app, owner, archive)
  t.equal(res.statusCode, 201, res.body)
  const [copy] = (await call(app, owner, 'GET', `/api/children?familyId=${res.json().family.id}`)).json().data
  const read = async (childId: number, url: string) => (await call(app, owner, 'GET', url.replace(':id', String(childId)))).json().data
  for (const url of [
    '/api/children/:id/measurements?sort=measuredAt',
    '/api/children/:id/measurements?sort=-measuredAt',
    '/api/children/:id/attachments?sort=-createdAt'
  ]) {
    const strip = (items: Json[]) => items.map(({ weightKg, fileName }: Json) => weightKg ?? fileName)
    t.same(strip(await read(copy.id, url)), strip(await read(child.id, url)), `${url} reads back in the same order`)
  }
  const illness = (await read(copy.id, '/api/children/:id/illnesses'))[0]
  const readings = async (illnessId: number) => (await call(app, owner, 'GET', `/api/illnesses/${illnessId}/temperatures`)).json().data.map((item: Json) => item.temperatureC)
  t.same(await readings(illness.id), await readings(flu.id), 'readings taken at the same time read back in the same order')
})

t.test('files from an archive obey the rules of uploads', async t => {
  const { app, owner, archive, entries } = await shared()
  const family = JSON.parse((entries.get('family.json') as Buffer).toString())
  const avatarEntry = `files/${(family.children[0].child.avatarUrl as string).split('/').pop()}`
  const photo = await sharp({ create: { width: 1200, height: 900, channels: 3, background: '#c84' } })
    .jpeg()
    .withExif({ IFD0: { Copyright: 'GPS 52.1N 4.3E', Make: 'Phone' } })
    .toBuffer()
  t.ok((await sharp(photo).metadata()).exif !== undefined, 'the photo carries EXIF')
  const pdfEntry = `files/${(family.children[1].attachments[0].url as string).split('/').pop()}`
  const png = await sharp({ create: { width: 20, height: 10, channels: 3, background: '#123' } }).png().toBuffer()

  const res = await importArchive(app, owner, await rebuilt(archive, found => {
    found.set(avatarEntry, photo)
    // A PNG named as a PDF: its type comes from its bytes.
    found.set(pdfEntry, png)
  }))
  t.equal(res.statusCode, 201, res.body)
  const children = (await call(app, owner, 'GET', `/api/children?familyId=${res.json().family.id}&sort=createdAt`)).json().data
  const zoe = children.find((child: Json) => child.name === 'Zoë')
  const avatar = await app.inject({ method: 'GET', url: zoe.avatarUrl })
  t.equal(avatar.headers['content-type'], 'image/webp', 'the avatar is re-encoded as WebP')
  t.match(zoe.avatarUrl, /\.webp$/)
  const meta = await sharp(avatar.rawPayload).metadata()
  t.equal(meta.format, 'webp')
  t.ok((meta.width as number) <= 512 && (meta.height as number) <= 512, `at most 512 × 512 (${meta.width} × ${meta.height})`)
  t.equal(meta.exif, undefined, 'without the photo\'s EXIF')
  const ari = children.find((child: Json) => child.name === 'Ari')
  const attachments = (await call(app, owner, 'GET', `/api/children/${ari.id}/attachments?limit=100`)).json().data
  const typed = attachments.find((item: Json) => item.contentType === 'image/png')
  t.ok(typed !== undefined, 'the attachment is typed by its bytes')
  t.match(typed.url, /\.png$/)
  t.equal((await app.inject({ method: 'GET', url: typed.url })).headers['content-type'], 'image/png')

  const before = await footprint(app)
  const text = await importArchive(app, owner, await rebuilt(archive, found => { found.set(avatarEntry, Buffer.from('GIF89a not really')) }))
  t.equal(text.statusCode, 400, 'an avatar that is not an image of an accepted type is refused')
  t.match(text.json().error, /the content of files\/.* is not an accepted type \(image\/jpeg, image\/png, image\/webp\)/)
  const broken = await importArchive(app, owner, await rebuilt(archive, found => { found.set(avatarEntry, Buffer.concat([photo.subarray(0, 400), Buffer.alloc(400)])) }))
  t.equal(broken.statusCode, 400, 'an avatar that cannot be decoded is refused')
  t.match(broken.json().error, /the avatar files\/.* cannot be used/)
  t.same(await footprint(app), before, 'nothing remains of either')
})
