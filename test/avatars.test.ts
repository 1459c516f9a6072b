import t, { type Test } from 'tap'
import sharp from 'sharp'
import { existsSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { IMAGE_CONCURRENCY, IMAGE_JOBS_PER_KEY, imageWork } from '../io/files/avatar'
import { build, call, members, register, type App, type Pair } from './helper'
import { exported, footprint, importArchive, rebuilt, richFamily } from './import-helpers'
import { file as part, postForm, solidImage, type ImageFormat, type Part } from './multipart'

const file = (value: Buffer, filename = 'me.jpg', type = 'image/jpeg'): Part => part(value, filename, type)
const setAvatar = (app: App, pair: Pair | null, childId: number | string, parts: Part[]) => postForm(app, pair, `/api/children/${childId}/avatar`, parts)
const image = (format: ImageFormat, width = 32, height = 32): Promise<Buffer> => solidImage(format, width, height, { r: 30, g: 120, b: 200 })

/** A camera photo: 1200 × 600, stored sideways (orientation 6), with GPS coordinates in its EXIF. */
async function photoWithGps (): Promise<Buffer> {
  return sharp({ create: { width: 1200, height: 600, channels: 3, background: { r: 200, g: 160, b: 90 } } })
    .jpeg()
    .withExif({
      IFD0: { Make: 'TestCam', Model: 'GPS 1' },
      IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '48/1 51/1 2400/100', GPSLongitudeRef: 'E', GPSLongitude: '2/1 21/1 0/1' }
    })
    .withMetadata({ orientation: 6 })
    .toBuffer()
}

/** The EXIF pointer to the GPS directory (tag 0x8825), little-endian as sharp writes it. */
const GPS_POINTER = Buffer.from([0x25, 0x88])

async function setup (t: Test, env: Record<string, string> = {}) {
  const app = await build(t, { env: { REGISTRATION: 'open', ...env } })
  const owner = await register(app)
  const child = (await call(app, owner, 'POST', '/api/children', { name: 'Kim', dateOfBirth: '2022-03-15', sex: 'female' })).json()
  return { app, owner, child }
}

function avatars (app: App): string[] {
  return readdirSync(app.config.avatarDir).sort()
}

t.test('an avatar from a photo with GPS EXIF is kept upright, small, as WebP, with no metadata', async t => {
  const { app, owner, child } = await setup(t)
  const photo = await photoWithGps()
  const original = await sharp(photo).metadata()
  t.equal(original.format, 'jpeg')
  t.ok(original.exif !== undefined && original.exif.includes(GPS_POINTER), 'the photo carries GPS EXIF')
  t.ok(original.exif?.includes(Buffer.from('TestCam')), 'and the camera\'s name')
  t.equal(original.orientation, 6)

  const res = await setAvatar(app, owner, child.id, [file(photo)])
  t.equal(res.statusCode, 200)
  t.same(Object.keys(res.json()), ['avatarUrl'])
  const { avatarUrl } = res.json()
  t.match(avatarUrl, /^\/avatars\/[0-9a-f]{32}\.webp$/, '128 random bits and .webp')
  t.equal((await call(app, owner, 'GET', `/api/children/${child.id}`)).json().avatarUrl, avatarUrl, 'the child names it')

  const served = await app.inject({ method: 'GET', url: avatarUrl })
  t.equal(served.statusCode, 200)
  t.equal(served.headers['content-type'], 'image/webp')
  const meta = await sharp(served.rawPayload).metadata()
  t.equal(meta.format, 'webp')
  t.same([meta.width, meta.height], [256, 512], 'turned upright and fitted within 512 × 512')
  t.equal(meta.exif, undefined, 'no EXIF is served')
  t.equal(meta.xmp, undefined, 'no XMP')
  t.equal(meta.icc, undefined, 'no ICC profile')
  t.equal(meta.orientation, undefined)
  t.notOk(served.rawPayload.includes(Buffer.from('TestCam')), 'nothing of the original metadata is in the bytes')
  t.notOk(served.rawPayload.includes(Buffer.from('Exif')))

  const [row] = await app.sql`select avatar_size_bytes as size from children where id = ${child.id}`
  t.equal(row.size, served.rawPayload.length, 'the stored size is the re-encoded file\'s')
})

t.test('small images keep their size; PNG and WebP are accepted too', async t => {
  const { app, owner, child } = await setup(t)
  for (const [format, width, height] of [['png', 40, 20], ['webp', 600, 1000], ['jpeg', 512, 512]] as Array<['png' | 'webp' | 'jpeg', number, number]>) {
    const res = await setAvatar(app, owner, child.id, [file(await image(format, width, height), `a.${format}`, `image/${format}`)])
    t.equal(res.statusCode, 200, format)
    const meta = await sharp((await app.inject({ method: 'GET', url: res.json().avatarUrl })).rawPayload).metadata()
    const scale = Math.min(1, 512 / width, 512 / height)
    t.same([meta.format, meta.width, meta.height], ['webp', Math.round(width * scale), Math.round(height * scale)], `${format} ${width} × ${height}`)
  }
  t.equal(avatars(app).length, 1, 'each new avatar replaced the one before')
})

t.test('replacing and deleting an avatar removes the old file', async t => {
  const { app, owner, child } = await setup(t)
  const first = (await setAvatar(app, owner, child.id, [file(await image('jpeg'))])).json().avatarUrl
  const firstFile = path.join(app.config.avatarDir, path.basename(first))
  t.ok(existsSync(firstFile))

  const second = (await setAvatar(app, owner, child.id, [file(await image('png'), 'b.png', 'image/png')])).json().avatarUrl
  t.not(second, first, 'a new name')
  t.notOk(existsSync(firstFile), 'the replaced file is removed')
  t.equal((await app.inject({ method: 'GET', url: first })).statusCode, 404, 'and no longer served')
  t.same(avatars(app), [path.basename(second)])

  const deleted = await call(app, owner, 'DELETE', `/api/children/${child.id}/avatar`)
  t.equal(deleted.statusCode, 204)
  t.equal(deleted.body, '')
  t.same(avatars(app), [], 'deleting removes the file')
  t.equal((await call(app, owner, 'GET', `/api/children/${child.id}`)).json().avatarUrl, null)
  const [row] = await app.sql`select avatar_name, avatar_size_bytes from children where id = ${child.id}`
  t.same(row, { avatar_name: null, avatar_size_bytes: null })
  t.equal((await call(app, owner, 'DELETE', `/api/children/${child.id}/avatar`)).statusCode, 204, 'deleting no avatar is a 204 too')
})

t.test('only JPEG, PNG and WebP make an avatar', async t => {
  const { app, owner, child } = await setup(t, { MAX_FILE_SIZE: '4096' })
  const current = (await setAvatar(app, owner, child.id, [file(await image('jpeg'))])).json().avatarUrl
  const refused: Array<[string, Buffer, string, string]> = [
    ['a GIF', await image('gif'), 'a.gif', 'image/gif'],
    ['a PDF', Buffer.from('%PDF-1.4\n%%EOF\n'), 'a.pdf', 'application/pdf'],
    ['an HTML page named .jpg', Buffer.from('<html><script>alert(1)</script></html>'), 'me.jpg', 'image/jpeg'],
    ['an ELF executable named .png', Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), Buffer.alloc(120)]), 'me.png', 'image/png'],
    ['a JPEG header over garbage', Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(200, 7)]), 'broken.jpg', 'image/jpeg']
  ]
  for (const [label, bytes, name, type] of refused) {
    const res = await setAvatar(app, owner, child.id, [file(bytes, name, type)])
    t.equal(res.statusCode, 415, label)
    t.equal(res.json().code, 'UNSUPPORTED_MEDIA_TYPE')
  }
  const big = await setAvatar(app, owner, child.id, [file(Buffer.alloc(4097, 0xff))])
  t.equal(big.statusCode, 413, 'one byte over MAX_FILE_SIZE')
  t.equal(big.json().code, 'PAYLOAD_TOO_LARGE')
  for (const [label, parts, code] of [
    ['no file', [], 'INVALID_BODY'],
    ['a field beside the file', [file(await image('png')), { name: 'visitId', value: '1' }], 'VALIDATION_ERROR'],
    ['two files', [file(await image('png')), file(await image('png'))], 'INVALID_BODY']
  ] as Array<[string, Part[], string]>) {
    const res = await setAvatar(app, owner, child.id, parts)
    t.equal(res.statusCode, 400, label)
    t.equal(res.json().code, code, label)
    if (code === 'VALIDATION_ERROR') t.same(res.json().details.issues, [{ path: '/body/visitId', message: 'is not allowed' }], 'naming the field')
  }
  const json = await call(app, owner, 'POST', `/api/children/${child.id}/avatar`, { file: 'x' })
  t.equal(json.statusCode, 415, 'a body that is not multipart')
  t.same(avatars(app), [path.basename(current)], 'nothing refused stays on disk, the avatar is kept')
  t.equal((await call(app, owner, 'GET', `/api/children/${child.id}`)).json().avatarUrl, current)
})

/** Two 64 × 64 frames, red then blue, as an animated WebP. */
async function animatedWebp (): Promise<Buffer> {
  const frame = 64 * 64 * 3
  const raw = Buffer.alloc(frame * 2)
  for (let i = 0; i < frame; i += 3) {
    raw[i] = 220
    raw[frame + i + 2] = 220
  }
  return sharp(raw, { raw: { width: 64, height: 128, channels: 3, pageHeight: 64 } }).webp({ loop: 0, delay: [100, 100], lossless: true }).toBuffer()
}

/** The colour of an image's first pixel: red, blue, or what it is. */
async function firstColour (image: Buffer): Promise<string> {
  const { data } = await sharp(image).removeAlpha().raw().toBuffer({ resolveWithObject: true })
  const [r, g, b] = data
  if (r > 200 && g < 20 && b < 20) return 'red'
  if (b > 200 && r < 20 && g < 20) return 'blue'
  return `${r}, ${g}, ${b}`
}

t.test('an animated WebP whose canvas is declared 10000 × 10000 is refused from its header', async t => {
  const { app, owner, child } = await setup(t)
  const current = (await setAvatar(app, owner, child.id, [file(await image('png'), 'a.png', 'image/png')])).json().avatarUrl

  const webp = await animatedWebp()
  // RIFF, the file's size less 8, WEBP; then the VP8X chunk: its name, its size (10), the flags
  // (0x02: animated), three reserved bytes, then the canvas width and height less one, 24 bits each.
  t.equal(webp.subarray(0, 4).toString('latin1'), 'RIFF')
  t.equal(webp.readUInt32LE(4), webp.length - 8)
  t.equal(webp.subarray(8, 16).toString('latin1'), 'WEBPVP8X')
  t.equal(webp.readUInt32LE(16), 10)
  t.equal(webp[20] & 0x02, 0x02, 'the animation flag is set')
  t.same([webp.readUIntLE(24, 3), webp.readUIntLE(27, 3)], [63, 63], 'a 64 × 64 canvas')
  t.equal(webp.subarray(30, 34).toString('latin1'), 'ANIM')
  t.equal(webp.subarray(webp.indexOf('ANMF'), webp.indexOf('ANMF') + 4).toString('latin1'), 'ANMF')
  t.not(webp.lastIndexOf('ANMF'), webp.indexOf('ANMF'), 'two frames')

  const bomb = Buffer.from(webp)
  bomb.writeUIntLE(9999, 24, 3)
  bomb.writeUIntLE(9999, 27, 3)
  t.ok(bomb.length < 300, `${bomb.length} bytes`)
  const header = await sharp(bomb).metadata()
  t.same([header.width, header.height, header.pages], [10000, 10000, 2], 'a 100-megapixel canvas of two frames')

  const res = await setAvatar(app, owner, child.id, [file(bomb, 'bomb.webp', 'image/webp')])
  t.equal(res.statusCode, 415)
  t.same(res.json(), {
    error: 'The image is 10000 × 10000 pixels; at most 40000000 pixels are decoded (IMAGE_MAX_PIXELS)',
    code: 'UNSUPPORTED_MEDIA_TYPE',
    details: { width: 10000, height: 10000, maxPixels: 40000000 }
  })
  t.same(avatars(app), [path.basename(current)], 'nothing of it stays on disk, the avatar is kept')
  t.equal((await call(app, owner, 'GET', `/api/children/${child.id}`)).json().avatarUrl, current)
})

t.test('a large image within the budget still becomes an avatar of at most 512 × 512', async t => {
  const { app, owner, child } = await setup(t)
  const large = await sharp({ create: { width: 7000, height: 5000, channels: 3, background: { r: 90, g: 160, b: 60 } } }).jpeg().toBuffer()
  const res = await setAvatar(app, owner, child.id, [file(large)])
  t.equal(res.statusCode, 200, '35 megapixels are within the default budget')
  const meta = await sharp((await app.inject({ method: 'GET', url: res.json().avatarUrl })).rawPayload).metadata()
  t.same([meta.format, meta.width, meta.height], ['webp', 512, 366])
})

t.test('IMAGE_MAX_PIXELS bounds a frame\'s pixels', async t => {
  const { app, owner, child } = await setup(t, { IMAGE_MAX_PIXELS: '10000' })
  for (const [format, width, height] of [['png', 100, 100], ['jpeg', 1, 10000], ['webp', 200, 50]] as Array<['png' | 'jpeg' | 'webp', number, number]>) {
    const res = await setAvatar(app, owner, child.id, [file(await image(format, width, height), `a.${format}`, `image/${format}`)])
    t.equal(res.statusCode, 200, `${format} ${width} × ${height}: exactly the budget`)
  }
  const kept = avatars(app)
  for (const [format, width, height] of [['png', 101, 100], ['jpeg', 1, 10001], ['webp', 200, 51]] as Array<['png' | 'jpeg' | 'webp', number, number]>) {
    const res = await setAvatar(app, owner, child.id, [file(await image(format, width, height), `a.${format}`, `image/${format}`)])
    t.equal(res.statusCode, 415, `${format} ${width} × ${height}: one row or column more`)
    t.same(res.json().details, { width, height, maxPixels: 10000 })
  }
  t.same(avatars(app), kept, 'refused images leave nothing')

  const animated = await setAvatar(app, owner, child.id, [file(await animatedWebp(), 'a.webp', 'image/webp')])
  t.equal(animated.statusCode, 200, 'an animation of two 64 × 64 frames counts one frame, 4096 pixels')
})

t.test('an animated WebP within the budget becomes a one-frame avatar of its first frame', async t => {
  const { app, owner, child } = await setup(t)
  const webp = await animatedWebp()
  t.equal((await sharp(webp).metadata()).pages, 2)
  t.equal(await firstColour(await sharp(webp, { page: 1 }).toBuffer()), 'blue', 'the second frame is blue')

  const res = await setAvatar(app, owner, child.id, [file(webp, 'moving.webp', 'image/webp')])
  t.equal(res.statusCode, 200)
  const served = (await app.inject({ method: 'GET', url: res.json().avatarUrl })).rawPayload
  const meta = await sharp(served).metadata()
  t.same([meta.format, meta.width, meta.height], ['webp', 64, 64])
  t.equal(meta.pages ?? 1, 1, 'one frame')
  t.notOk(served.includes(Buffer.from('ANIM')), 'no animation chunk')
  t.equal(await firstColour(served), 'red', 'the first frame')
})

/** Waits until the image pool holds this many jobs of a key. */
async function pendingImages (key: string, count: number): Promise<void> {
  const until = Date.now() + 10_000
  while (imageWork.pending(key) !== count) {
    if (Date.now() > until) throw new Error(`the image pool holds ${imageWork.pending(key)} jobs of ${key}, not ${count}`)
    await new Promise(resolve => setTimeout(resolve, 5))
  }
}

t.test('the image pool: a user\'s images beyond their share are a 429, another user\'s go through', async t => {
  const { app, owner, child } = await setup(t)
  const other = await register(app)
  const otherChild = (await call(app, other, 'POST', '/api/children', { name: 'Sam', dateOfBirth: '2021-01-02', sex: 'male' })).json()
  const png = await image('png')

  // Other work holds every slot of the pool, so that uploads wait their turn.
  let release!: () => void
  const busy = new Promise<void>(resolve => { release = resolve })
  const holders = Array.from({ length: IMAGE_CONCURRENCY }, (_, i) => imageWork.run(`other work ${i}`, () => busy))
  t.teardown(release)

  const key = `user:${owner.user.id}`
  const waiting = Array.from({ length: IMAGE_JOBS_PER_KEY }, () => setAvatar(app, owner, child.id, [file(png)]))
  await pendingImages(key, IMAGE_JOBS_PER_KEY)
  const before = avatars(app)

  const refused = await setAvatar(app, owner, child.id, [file(png)])
  t.equal(refused.statusCode, 429, 'one more than the user\'s share')
  t.equal(refused.json().code, 'RATE_LIMITED')
  t.equal(refused.headers['retry-after'], '5')
  t.same(avatars(app), before, 'the refused upload left nothing')

  const otherUpload = setAvatar(app, other, otherChild.id, [file(png)])
  await pendingImages(`user:${other.user.id}`, 1)
  release()
  await Promise.all(holders)
  t.equal((await otherUpload).statusCode, 200, 'another user\'s upload goes through')
  t.same((await Promise.all(waiting)).map(res => res.statusCode), [200, 200], 'the user\'s own waiting uploads too')
  t.equal(imageWork.pending(key), 0)
  t.equal((await setAvatar(app, owner, child.id, [file(png)])).statusCode, 200, 'and once they are done, the user may upload again')
  t.equal(avatars(app).length, 2, 'one avatar per child')
})

t.test('an archive\'s avatars keep to the same budget and take the importing user\'s share of the pool', async t => {
  const { app, owner } = await setup(t)
  const archive = await exported(app, owner, await richFamily(app, owner))
  const avatarEntry = (found: Map<string, Buffer>) => [...found.keys()].find(name => name.startsWith('files/') && name.endsWith('.webp')) as string
  const bomb = Buffer.from(await animatedWebp())
  bomb.writeUIntLE(9999, 24, 3)
  bomb.writeUIntLE(9999, 27, 3)
  const before = await footprint(app)

  const refused = await importArchive(app, owner, await rebuilt(archive, found => { found.set(avatarEntry(found), bomb) }))
  t.equal(refused.statusCode, 400)
  t.equal(refused.json().code, 'INVALID_ARCHIVE')
  t.match(refused.json().error, /the avatar files\/.* cannot be used: The image is 10000 × 10000 pixels; at most 40000000 pixels are decoded/)

  let release!: () => void
  const busy = new Promise<void>(resolve => { release = resolve })
  t.teardown(release)
  const mine = Array.from({ length: IMAGE_JOBS_PER_KEY }, () => imageWork.run(`user:${owner.user.id}`, () => busy))
  const full = await importArchive(app, owner, archive)
  t.equal(full.statusCode, 429, 'while the user\'s share is taken')
  t.equal(full.json().code, 'RATE_LIMITED')
  t.equal(full.headers['retry-after'], '5')
  t.same(await footprint(app), before, 'neither import left anything')
  release()
  await Promise.all(mine)
  t.equal((await importArchive(app, owner, archive)).statusCode, 201, 'once it is free again, the archive imports')
})

t.test('who may set and remove an avatar', async t => {
  const { app, owner, child } = await setup(t)
  const { member, viewer, stranger } = await members(app, owner, { member: 'member', viewer: 'viewer', stranger: null })
  const png = await image('png')

  const byMember = await setAvatar(app, member, child.id, [file(png)])
  t.equal(byMember.statusCode, 200, 'a member sets one')
  const kept = byMember.json().avatarUrl
  const forbidden = { error: 'Access denied', code: 'FORBIDDEN', details: {} }
  for (const [label, pair] of [['a viewer', viewer], ['another family', stranger]] as Array<[string, Pair]>) {
    const set = await setAvatar(app, pair, child.id, [file(png)])
    t.equal(set.statusCode, 403, `${label} may not set one`)
    t.same(set.json(), forbidden)
    t.equal((await call(app, pair, 'DELETE', `/api/children/${child.id}/avatar`)).statusCode, 403, `or remove it`)
  }
  t.equal((await setAvatar(app, null, child.id, [file(png)])).statusCode, 401, 'no token')
  t.equal((await call(app, null, 'DELETE', `/api/children/${child.id}/avatar`)).statusCode, 401)
  t.equal((await setAvatar(app, owner, 999999, [file(png)])).statusCode, 404, 'a child that does not exist')
  t.equal((await call(app, owner, 'DELETE', '/api/children/999999/avatar')).statusCode, 404)
  t.equal((await setAvatar(app, owner, 'abc', [file(png)])).statusCode, 400, 'a child id that is no id')

  t.same(avatars(app), [path.basename(kept)], 'refused uploads left nothing')
  t.equal((await call(app, owner, 'GET', `/api/children/${child.id}`)).json().avatarUrl, kept)
  t.equal((await call(app, member, 'DELETE', `/api/children/${child.id}/avatar`)).statusCode, 204, 'a member removes it')
  t.same(avatars(app), [])
})

t.test('the OpenAPI document describes the avatar routes', async t => {
  const app = await build(t)
  const doc = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  const post = doc.paths['/api/children/{id}/avatar'].post
  t.equal(post.operationId, 'uploadChildAvatar')
  t.match(post.requestBody.content['multipart/form-data'].schema, { required: ['file'], properties: { file: { type: 'string', format: 'binary' } } })
  t.match(post.responses['200'].content['application/json'].schema, { properties: { avatarUrl: { type: 'string' } } })
  t.equal(doc.paths['/api/children/{id}/avatar'].delete.operationId, 'deleteChildAvatar')
})
