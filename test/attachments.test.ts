import t, { type Test } from 'tap'
import http from 'node:http'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { bearer, build, call, members, register, type App, type Pair } from './helper'
import { file as part, form, postForm, solidImage, type ImageFormat, type Part } from './multipart'

const OPEN = { REGISTRATION: 'open' }

const file = (value: Buffer, filename = 'scan.png', type = 'image/png'): Part => part(value, filename, type)
const upload = (app: App, pair: Pair | null, childId: number | string, parts: Part[]) => postForm(app, pair, `/api/children/${childId}/attachments`, parts)
const image = (format: ImageFormat, width = 8, height = 8): Promise<Buffer> => solidImage(format, width, height, { r: 200, g: 40, b: 90 })

const PDF = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n')
/** The start of a HEIC file: an ISO media `ftyp` box of brand heic. */
const HEIC = Buffer.concat([Buffer.from([0, 0, 0, 24]), Buffer.from('ftypheic'), Buffer.from([0, 0, 0, 0]), Buffer.from('mif1heic'), Buffer.alloc(64)])
const HTML = Buffer.from('<!doctype html><html><body><script>alert(document.cookie)</script></body></html>')
const ELF = Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), Buffer.alloc(120)])
const PE = Buffer.concat([Buffer.from('MZ'), Buffer.alloc(126)])

async function setup (t: Test, env: Record<string, string> = {}) {
  const app = await build(t, { env: { ...OPEN, ...env } })
  const owner = await register(app)
  const child = (await call(app, owner, 'POST', '/api/children', { name: 'Kim', dateOfBirth: '2022-03-15', sex: 'female' })).json()
  const sibling = (await call(app, owner, 'POST', '/api/children', { name: 'Lou', dateOfBirth: '2022-03-15', sex: 'male' })).json()
  return { app, owner, child, sibling }
}

function stored (app: App): string[] {
  return readdirSync(app.config.uploadDir).sort()
}

async function rowCount (app: App): Promise<number> {
  const [{ n }] = await app.sql`select count(*)::int as n from attachments`
  return n
}

t.test('each allowed type is accepted, typed by its bytes and stored under a random name', async t => {
  const { app, owner, child } = await setup(t)
  const samples: Array<[string, Buffer, string, string]> = [
    ['PNG', await image('png'), 'image/png', 'png'],
    ['JPEG', await image('jpeg'), 'image/jpeg', 'jpg'],
    ['WebP', await image('webp'), 'image/webp', 'webp'],
    ['GIF', await image('gif'), 'image/gif', 'gif'],
    ['HEIC', HEIC, 'image/heic', 'heic'],
    ['PDF', PDF, 'application/pdf', 'pdf']
  ]
  for (const [label, bytes, contentType, ext] of samples) {
    // The declared type and name say nothing true: only the bytes count.
    const res = await upload(app, owner, child.id, [file(bytes, 'upload.bin', 'application/octet-stream')])
    t.equal(res.statusCode, 201, `${label} is accepted`)
    const created = res.json()
    t.equal(res.headers.location, `/api/attachments/${created.id}`)
    t.same(Object.keys(created).sort(), ['childId', 'contentType', 'createdAt', 'fileName', 'id', 'illnessId', 'measurementId', 'sizeBytes', 'url', 'version', 'visitId'])
    t.match(created, { childId: child.id, visitId: null, measurementId: null, illnessId: null, fileName: 'upload.bin', contentType, sizeBytes: bytes.length })
    t.match(created.url, new RegExp(`^/uploads/[0-9a-f]{32}\\.${ext}$`), `${label} is stored with 128 random bits and .${ext}`)
    t.same(readFileSync(path.join(app.config.uploadDir, path.basename(created.url))), bytes, 'the stored bytes are the uploaded ones')
    t.same((await call(app, owner, 'GET', `/api/attachments/${created.id}`)).json(), created)
  }
  t.equal(stored(app).length, samples.length, 'one file per attachment, nothing else')
})

t.test('the original name is kept only as fileName, cleaned', async t => {
  const { app, owner, child } = await setup(t)
  const png = await image('png')
  const names: Array<[string, string]> = [
    ['../../etc/passwd.png', 'passwd.png'],
    ['C:\\Users\\kim\\scan.png', 'scan.png'],
    ['  bell\u0007\u001b[31mred\u202egnp.exe  ', 'bell[31mredgnp.exe'],
    ['ré sumé.png', 'ré sumé.png'],
    [`${'n'.repeat(300)}.png`, 'n'.repeat(255)],
    ['', `attachment-${new Date().toISOString().slice(0, 10)}.png`],
    ['blob', `attachment-${new Date().toISOString().slice(0, 10)}.png`]
  ]
  for (const [sent, kept] of names) {
    const res = await upload(app, owner, child.id, [file(png, sent)])
    t.equal(res.statusCode, 201)
    t.equal(res.json().fileName, kept, JSON.stringify(sent))
    t.notMatch(res.json().url, /passwd|scan|exe/, 'the stored name never comes from the client')
  }
})

t.test('a file that is not an allowed type is refused whatever its name and declared type', async t => {
  const { app, owner, child } = await setup(t)
  const refused: Array<[string, Buffer, string, string]> = [
    ['an HTML page named .png', HTML, 'cute.png', 'image/png'],
    ['an ELF executable named .png', ELF, 'photo.png', 'image/png'],
    ['a Windows executable named .jpg', PE, 'photo.jpg', 'image/jpeg'],
    ['an empty file', Buffer.alloc(0), 'empty.pdf', 'application/pdf'],
    ['plain text named .pdf', Buffer.from('just some words'), 'notes.pdf', 'application/pdf']
  ]
  for (const [label, bytes, name, type] of refused) {
    const res = await upload(app, owner, child.id, [file(bytes, name, type)])
    t.equal(res.statusCode, 415, label)
    t.equal(res.json().code, 'UNSUPPORTED_MEDIA_TYPE')
  }
  t.same(stored(app), [], 'nothing refused stays on disk')
  t.equal(await rowCount(app), 0, 'and no row')
})

t.test('an upload over MAX_FILE_SIZE is refused while streaming and leaves nothing', async t => {
  const limit = 4096
  const { app, owner, child } = await setup(t, { MAX_FILE_SIZE: String(limit) })
  const exact = Buffer.concat([PDF, Buffer.alloc(limit - PDF.length, 0x20)])
  const fits = await upload(app, owner, child.id, [file(exact, 'exact.pdf', 'application/pdf')])
  t.equal(fits.statusCode, 201, 'exactly MAX_FILE_SIZE bytes is accepted')
  t.equal(fits.json().sizeBytes, limit)
  const before = stored(app)

  const over = Buffer.concat([exact, Buffer.from(' ')])
  const res = await upload(app, owner, child.id, [file(over, 'over.pdf', 'application/pdf'), { name: 'visitId', value: '1' }])
  t.equal(res.statusCode, 413, 'one byte more is refused')
  t.same(res.json(), { error: `The file is larger than ${limit} bytes`, code: 'PAYLOAD_TOO_LARGE', details: {} })
  t.same(stored(app), before, 'nothing of it is left in the upload directory')
  t.equal(await rowCount(app), 1)

  const huge = await upload(app, owner, child.id, [file(Buffer.alloc(5 * 1024 * 1024, 1), 'huge.pdf')])
  t.equal(huge.statusCode, 413, 'a much larger one too')
  t.same(stored(app), before)
})

t.test('the multipart body: one file in field file, known fields in any order, converted like query strings', async t => {
  const { app, owner, child } = await setup(t)
  const png = await image('png')
  const visit = (await call(app, owner, 'POST', `/api/children/${child.id}/visits`, { date: '2023-01-10', type: 'sick' })).json()

  const before = await upload(app, owner, child.id, [{ name: 'visitId', value: String(visit.id) }, file(png), { name: 'illnessId', value: ' ' }])
  t.equal(before.statusCode, 201, 'fields before the file, an empty one absent')
  t.match(before.json(), { visitId: visit.id, illnessId: null })
  const after = await upload(app, owner, child.id, [file(png), { name: 'visitId', value: String(visit.id) }])
  t.equal(after.statusCode, 201, 'fields after the file')
  t.equal(after.json().visitId, visit.id)
  const count = await rowCount(app)
  const files = stored(app)

  const invalid: Array<[string, Part[], string]> = [
    ['no file', [{ name: 'visitId', value: '1' }], 'INVALID_BODY'],
    ['an empty body', [], 'INVALID_BODY'],
    ['two files', [file(png), file(png, 'second.png')], 'INVALID_BODY'],
    ['a second file under another name', [file(png), { ...file(png), name: 'other' }], 'INVALID_BODY'],
    ['a file in another field', [{ ...file(png), name: 'image' }], 'INVALID_BODY'],
    ['file as a text field', [{ name: 'file', value: 'hello' }], 'INVALID_BODY'],
    ['an unknown field before the file', [{ name: 'childId', value: String(child.id) }, file(png)], 'VALIDATION_ERROR'],
    ['an unknown field after the file', [file(png), { name: 'note', value: 'x' }], 'VALIDATION_ERROR'],
    ['a field sent twice', [file(png), { name: 'visitId', value: '1' }, { name: 'visitId', value: '1' }], 'INVALID_BODY'],
    ['a prototype name', [file(png), { name: '__proto__', value: '1' }], 'INVALID_BODY'],
    ['a word for an id', [file(png), { name: 'visitId', value: 'abc' }], 'VALIDATION_ERROR'],
    ['zero', [file(png), { name: 'measurementId', value: '0' }], 'VALIDATION_ERROR'],
    ['a fraction', [file(png), { name: 'illnessId', value: '1.5' }], 'VALIDATION_ERROR'],
    ['an id with spaces', [file(png), { name: 'visitId', value: ` ${visit.id} ` }], 'VALIDATION_ERROR'],
    ['an id in hexadecimal', [file(png), { name: 'visitId', value: '0x1' }], 'VALIDATION_ERROR'],
    ['an id out of range', [file(png), { name: 'visitId', value: '2147483648' }], 'VALIDATION_ERROR']
  ]
  for (const [label, parts, code] of invalid) {
    const res = await upload(app, owner, child.id, parts)
    t.equal(res.statusCode, 400, label)
    t.equal(res.json().code, code, label)
    if (code === 'VALIDATION_ERROR') t.match(res.json().details.issues, [{ path: /^\/body\/(visitId|measurementId|illnessId|childId|note)$/ }])
  }

  const body = form([file(png)])
  const truncated = await app.inject({
    method: 'POST',
    url: `/api/children/${child.id}/attachments`,
    headers: { ...bearer(owner.accessToken), ...body.headers },
    payload: body.payload.subarray(0, body.payload.length - 60)
  })
  t.equal(truncated.statusCode, 400, 'a body cut short')
  t.equal(truncated.json().code, 'INVALID_BODY')
  const noBoundary = await app.inject({
    method: 'POST',
    url: `/api/children/${child.id}/attachments`,
    headers: { ...bearer(owner.accessToken), 'content-type': 'multipart/form-data' },
    payload: body.payload
  })
  t.equal(noBoundary.statusCode, 400, 'a multipart type without boundary')
  t.equal(noBoundary.json().code, 'INVALID_BODY')

  for (const [label, headers, payload] of [
    ['JSON', { 'content-type': 'application/json' }, JSON.stringify({ file: 'x' })],
    ['no body', {}, undefined],
    ['plain text', { 'content-type': 'text/plain' }, 'hello'],
    ['form-urlencoded', { 'content-type': 'application/x-www-form-urlencoded' }, 'file=x']
  ] as Array<[string, Record<string, string>, string | undefined]>) {
    const res = await app.inject({ method: 'POST', url: `/api/children/${child.id}/attachments`, headers: { ...bearer(owner.accessToken), ...headers }, payload })
    t.equal(res.statusCode, 415, `${label} is not multipart`)
    t.equal(res.json().code, 'UNSUPPORTED_MEDIA_TYPE')
  }

  t.equal(await rowCount(app), count, 'no refused upload made a row')
  t.same(stored(app), files, 'or left a file')
})

t.test('links go to a visit, measurement or illness of the same child', async t => {
  const { app, owner, child, sibling } = await setup(t)
  const png = await image('png')
  const records = async (childId: number) => {
    const visit = (await call(app, owner, 'POST', `/api/children/${childId}/visits`, { date: '2023-01-10', type: 'sick' })).json()
    const measurement = (await call(app, owner, 'POST', `/api/children/${childId}/measurements`, { measuredAt: '2023-01-10', weightKg: 9 })).json()
    const illness = (await call(app, owner, 'POST', `/api/children/${childId}/illnesses`, { startDate: '2023-01-10' })).json()
    return { visitId: visit.id as number, measurementId: measurement.id as number, illnessId: illness.id as number }
  }
  const own = await records(child.id)
  const other = await records(sibling.id)
  const fields = (links: Record<string, number>): Part[] => Object.entries(links).map(([name, value]) => ({ name, value: String(value) }))

  const linked = await upload(app, owner, child.id, [file(png), ...fields(own)])
  t.equal(linked.statusCode, 201, 'all three links to the same child')
  t.match(linked.json(), own)
  for (const [field, id] of Object.entries(own)) {
    const one = await upload(app, owner, child.id, [{ name: field, value: String(id) }, file(png)])
    t.equal(one.statusCode, 201, `${field} alone`)
    t.equal(one.json()[field], id)
  }
  const files = stored(app)

  for (const field of Object.keys(own) as Array<keyof typeof own>) {
    for (const [label, id] of [['of another child', other[field]], ['that does not exist', 999999]] as Array<[string, number]>) {
      const res = await upload(app, owner, child.id, [file(png), { name: field, value: String(id) }])
      t.equal(res.statusCode, 400, `${field} ${label}`)
      t.equal(res.json().code, 'VALIDATION_ERROR')
      t.same(res.json().details.issues, [{ path: `/body/${field}`, message: `must be a ${{ visitId: 'visit', measurementId: 'measurement', illnessId: 'illness' }[field]} of the same child` }])
    }
  }
  const all = await upload(app, owner, child.id, [file(png), ...fields(other)])
  t.equal(all.json().details.issues.length, 3, 'every wrong link is named')
  t.same(stored(app), files, 'a refused link leaves no file')

  const byVisit = (await call(app, owner, 'GET', `/api/children/${child.id}/attachments?visitId=${own.visitId}`)).json()
  t.equal(byVisit.meta.total, 2, 'the visitId filter')
  t.ok(byVisit.data.every((a: any) => a.visitId === own.visitId))
  const byMeasurement = (await call(app, owner, 'GET', `/api/children/${child.id}/attachments?measurementId=${own.measurementId}`)).json()
  t.equal(byMeasurement.meta.total, 2, 'the measurementId filter')
  const both = (await call(app, owner, 'GET', `/api/children/${child.id}/attachments?illnessId=${own.illnessId}&visitId=${own.visitId}`)).json()
  t.equal(both.meta.total, 1, 'filters combine')
  t.equal((await call(app, owner, 'GET', `/api/children/${child.id}/attachments?visitId=abc`)).statusCode, 400)

  t.equal((await call(app, owner, 'DELETE', `/api/visits/${own.visitId}`)).statusCode, 204)
  const kept = (await call(app, owner, 'GET', `/api/attachments/${linked.json().id}`)).json()
  t.match(kept, { visitId: null, measurementId: own.measurementId, illnessId: own.illnessId }, 'deleting a visit keeps its attachments, unlinked')
})

t.test('a child\'s attachments are listed, sorted and paginated in the database', async t => {
  const { app, owner, child, sibling } = await setup(t)
  const sizes = [await image('png', 4, 4), await image('png', 40, 40), await image('png', 16, 16)]
  const names = ['b.png', 'a.png', 'c.png']
  const ids: number[] = []
  for (let i = 0; i < names.length; i++) {
    ids.push((await upload(app, owner, child.id, [file(sizes[i], names[i])])).json().id)
  }
  await upload(app, owner, sibling.id, [file(sizes[0])])

  const list = await call(app, owner, 'GET', `/api/children/${child.id}/attachments`)
  t.equal(list.statusCode, 200)
  t.same(list.json().meta, { total: 3, limit: 50, offset: 0 })
  t.same(list.json().data.map((a: any) => a.id), [...ids].reverse(), 'newest first by default, only this child\'s')
  const sorted = async (sort: string) => (await call(app, owner, 'GET', `/api/children/${child.id}/attachments?sort=${sort}`)).json().data.map((a: any) => a.fileName)
  t.same(await sorted('createdAt'), names)
  t.same(await sorted('fileName'), ['a.png', 'b.png', 'c.png'])
  t.same(await sorted('-fileName'), ['c.png', 'b.png', 'a.png'])
  const bySize = [...names].sort((x, y) => sizes[names.indexOf(x)].length - sizes[names.indexOf(y)].length)
  t.same(await sorted('sizeBytes'), bySize)
  t.same(await sorted('-sizeBytes'), [...bySize].reverse())
  const page = (await call(app, owner, 'GET', `/api/children/${child.id}/attachments?sort=fileName&limit=1&offset=1`)).json()
  t.same(page, { data: [page.data[0]], meta: { total: 3, limit: 1, offset: 1 } })
  t.equal(page.data[0].fileName, 'b.png')
  const past = (await call(app, owner, 'GET', `/api/children/${child.id}/attachments?offset=10`)).json()
  t.same(past, { data: [], meta: { total: 3, limit: 50, offset: 10 } }, 'the total also past the end')
  for (const query of ['sort=url', 'sort=storedName', 'limit=0', 'limit=1001', 'offset=-1']) {
    t.equal((await call(app, owner, 'GET', `/api/children/${child.id}/attachments?${query}`)).statusCode, 400, query)
  }
})

t.test('deleting an attachment removes its file after the commit', async t => {
  const { app, owner, child } = await setup(t)
  const keep = (await upload(app, owner, child.id, [file(PDF, 'keep.pdf')])).json()
  const gone = (await upload(app, owner, child.id, [file(await image('jpeg'), 'gone.jpg')])).json()
  const onDisk = path.join(app.config.uploadDir, path.basename(gone.url))
  t.ok(existsSync(onDisk))
  t.equal((await app.inject({ method: 'GET', url: gone.url })).statusCode, 200)

  const res = await call(app, owner, 'DELETE', `/api/attachments/${gone.id}`)
  t.equal(res.statusCode, 204)
  t.equal(res.body, '')
  t.notOk(existsSync(onDisk), 'the file is gone')
  t.equal((await app.inject({ method: 'GET', url: gone.url })).statusCode, 404, 'and no longer served')
  t.equal((await call(app, owner, 'GET', `/api/attachments/${gone.id}`)).statusCode, 404)
  t.equal((await call(app, owner, 'DELETE', `/api/attachments/${gone.id}`)).statusCode, 404)
  t.same(stored(app), [path.basename(keep.url)], 'the other file stays')
})

t.test('deleting a child removes the files of its attachments and avatar', async t => {
  const { app, owner, child, sibling } = await setup(t)
  const png = await image('png', 64, 64)
  const mine = [(await upload(app, owner, child.id, [file(png)])).json(), (await upload(app, owner, child.id, [file(PDF, 'a.pdf')])).json()]
  const theirs = (await upload(app, owner, sibling.id, [file(png)])).json()
  const body = form([file(png)])
  const avatar = await app.inject({ method: 'POST', url: `/api/children/${child.id}/avatar`, headers: { ...bearer(owner.accessToken), ...body.headers }, payload: body.payload })
  t.equal(avatar.statusCode, 200)
  const avatarFile = path.join(app.config.avatarDir, path.basename(avatar.json().avatarUrl))
  t.ok(existsSync(avatarFile))

  t.equal((await call(app, owner, 'DELETE', `/api/children/${child.id}`)).statusCode, 204)
  for (const attachment of mine) {
    t.notOk(existsSync(path.join(app.config.uploadDir, path.basename(attachment.url))), `${attachment.fileName} is removed`)
  }
  t.notOk(existsSync(avatarFile), 'the avatar is removed')
  t.same(stored(app), [path.basename(theirs.url)], 'the sibling\'s file stays')
  t.equal(await rowCount(app), 1)
})

t.test('who may upload, list, read and delete', async t => {
  const { app, owner, child } = await setup(t)
  const { member, viewer, stranger } = await members(app, owner, { member: 'member', viewer: 'viewer', stranger: null })
  const strangerChild = (await call(app, stranger, 'POST', '/api/children', { name: 'Zed', dateOfBirth: '2021-01-01', sex: 'male' })).json()
  const png = await image('png')
  const own = (await upload(app, owner, child.id, [file(png)])).json()
  const files = stored(app)

  const byMember = await upload(app, member, child.id, [file(png)])
  t.equal(byMember.statusCode, 201, 'a member uploads')
  t.equal((await call(app, member, 'DELETE', `/api/attachments/${byMember.json().id}`)).statusCode, 204, 'and deletes')

  const forbidden = { error: 'Access denied', code: 'FORBIDDEN', details: {} }
  const viewerUpload = await upload(app, viewer, child.id, [file(png)])
  t.equal(viewerUpload.statusCode, 403, 'a viewer may not upload')
  t.same(viewerUpload.json(), forbidden)
  t.equal((await call(app, viewer, 'DELETE', `/api/attachments/${own.id}`)).statusCode, 403, 'or delete')
  t.equal((await call(app, viewer, 'GET', `/api/children/${child.id}/attachments`)).json().meta.total, 1, 'but lists')
  t.equal((await call(app, viewer, 'GET', `/api/attachments/${own.id}`)).statusCode, 200, 'and reads')

  const strangerUpload = await upload(app, stranger, child.id, [file(png)])
  t.equal(strangerUpload.statusCode, 403, 'another family may not upload')
  t.same(strangerUpload.json(), forbidden)
  t.equal((await call(app, stranger, 'GET', `/api/children/${child.id}/attachments`)).statusCode, 403, 'list')
  t.equal((await call(app, stranger, 'GET', `/api/attachments/${own.id}`)).statusCode, 403, 'read')
  t.equal((await call(app, stranger, 'DELETE', `/api/attachments/${own.id}`)).statusCode, 403, 'or delete')
  t.same((await call(app, owner, 'GET', `/api/children/${strangerChild.id}/attachments`)).json().code, 'FORBIDDEN', 'and neither the other way round')

  for (const [method, url] of [['GET', `/api/children/${child.id}/attachments`], ['GET', `/api/attachments/${own.id}`], ['DELETE', `/api/attachments/${own.id}`]]) {
    const res = await call(app, null, method, url)
    t.equal(res.statusCode, 401, `${method} ${url} without a token`)
    t.equal(res.headers['www-authenticate'], 'Bearer')
  }
  t.equal((await upload(app, null, child.id, [file(png)])).statusCode, 401, 'an upload without a token')

  t.equal((await upload(app, owner, 999999, [file(png)])).statusCode, 404, 'a child that does not exist')
  t.equal((await call(app, owner, 'GET', '/api/children/999999/attachments')).statusCode, 404)
  t.equal((await call(app, owner, 'GET', '/api/attachments/999999')).statusCode, 404)
  t.equal((await call(app, owner, 'DELETE', '/api/attachments/999999')).statusCode, 404)
  t.equal((await upload(app, owner, 'abc', [file(png)])).statusCode, 400, 'a child id that is no id')
  t.equal((await call(app, owner, 'GET', '/api/attachments/0')).statusCode, 400)

  t.same(stored(app), files, 'no refused upload left a file')
  t.equal((await app.inject({ method: 'GET', url: own.url })).statusCode, 200, 'the file is still there')
})

t.test('an upload whose insert fails leaves no file', async t => {
  const { app, owner, child } = await setup(t)
  await app.sql.unsafe(`
    create function refuse_attachment() returns trigger language plpgsql as $$ begin raise exception 'refused'; end $$;
    create trigger refuse_attachment before insert on attachments for each row execute function refuse_attachment();
  `)
  const res = await upload(app, owner, child.id, [file(await image('png'))])
  t.equal(res.statusCode, 500)
  t.same(stored(app), [], 'the file written before the commit is removed')
  t.equal(await rowCount(app), 0)
})

function post (port: number, pair: Pair, childId: number, headers: Record<string, string>, length: number): http.ClientRequest {
  return http.request({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path: `/api/children/${childId}/attachments`,
    headers: { ...bearer(pair.accessToken), ...headers, 'content-length': String(length) }
  })
}

t.test('an aborted or cut-short upload leaves no file and no row', async t => {
  const { app, owner, child } = await setup(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }

  const short = form([file(await image('png'))])
  const cut = short.payload.subarray(0, short.payload.length - 60)
  const answer = await new Promise<{ status: number, body: string }>((resolve, reject) => {
    const request = post(port, owner, child.id, short.headers, cut.length)
    request.on('response', res => {
      let text = ''
      res.on('data', chunk => { text += chunk })
      res.on('end', () => resolve({ status: res.statusCode as number, body: text }))
    })
    request.on('error', reject)
    request.end(cut)
  })
  t.equal(answer.status, 400, 'a body that ends inside the file')
  t.equal(JSON.parse(answer.body).code, 'INVALID_BODY')
  t.same(stored(app), [])

  const body = form([file(Buffer.concat([PDF, Buffer.alloc(256 * 1024, 0x20)]), 'big.pdf', 'application/pdf')])
  const request = post(port, owner, child.id, body.headers, body.payload.length)
  request.on('error', () => {})
  request.write(body.payload.subarray(0, 100 * 1024))
  for (let waited = 0; waited < 5000 && stored(app).length === 0; waited += 20) await new Promise(resolve => setTimeout(resolve, 20))
  t.equal(stored(app).length, 1, 'the upload is being written to a temporary file')
  t.match(stored(app)[0], /^\.upload-[0-9a-f]{32}\.part$/)
  request.destroy()
  for (let waited = 0; waited < 5000 && stored(app).length > 0; waited += 20) await new Promise(resolve => setTimeout(resolve, 20))
  t.same(stored(app), [], 'the temporary file is removed')
  t.equal(await rowCount(app), 0, 'and no row was made')
})

t.test('the OpenAPI document describes the upload as multipart/form-data', async t => {
  const app = await build(t)
  const doc = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  const post = doc.paths['/api/children/{childId}/attachments'].post
  t.equal(post.operationId, 'uploadAttachment')
  t.same(post.security, [{ bearer: [] }])
  t.same(Object.keys(post.requestBody.content), ['multipart/form-data'])
  const schema = post.requestBody.content['multipart/form-data'].schema
  t.match(schema, { type: 'object', required: ['file'], properties: { file: { type: 'string', format: 'binary' }, visitId: { type: 'integer' } } })
  t.same(Object.keys(post.responses).sort(), ['201', '400', '401', '403', '404', '409', '413', '415', '422', '500', '503'])
  t.equal(doc.paths['/api/children/{childId}/attachments'].get.operationId, 'listChildAttachments')
  t.equal(doc.paths['/api/attachments/{id}'].get.operationId, 'getAttachment')
  t.equal(doc.paths['/api/attachments/{id}'].delete.operationId, 'deleteAttachment')
  t.ok(doc.components.schemas.Attachment, 'Attachment is a named schema')
  t.ok(doc.components.schemas.AttachmentList)
})
