import t, { type Test } from 'tap'
import sharp from 'sharp'
import http from 'node:http'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { build, call, register, type App, type Pair } from './helper'
import { file as part, form } from './multipart'

async function post (app: App, pair: Pair, url: string, value: Buffer, filename: string, type: string): Promise<any> {
  const body = form([part(value, filename, type)])
  const res = await call(app, pair, 'POST', url, body.payload, body.headers)
  if (res.statusCode >= 300) throw new Error(`${url} answered ${res.statusCode}: ${res.body}`)
  return res.json()
}

const PDF = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n')

async function setup (t: Test, env: Record<string, string> = {}) {
  const app = await build(t, { env: { REGISTRATION: 'open', ...env } })
  const owner = await register(app)
  const child = (await call(app, owner, 'POST', '/api/children', { name: 'Kim', dateOfBirth: '2022-03-15', sex: 'female' })).json()
  const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: 'teal' } }).png().toBuffer()
  const jpeg = await sharp({ create: { width: 8, height: 8, channels: 3, background: 'teal' } }).jpeg().toBuffer()
  const files = {
    png: { bytes: png, attachment: await post(app, owner, `/api/children/${child.id}/attachments`, png, 'a.pdf', 'application/pdf') },
    pdf: { bytes: PDF, attachment: await post(app, owner, `/api/children/${child.id}/attachments`, PDF, 'b.png', 'image/png') }
  }
  const avatar = (await post(app, owner, `/api/children/${child.id}/avatar`, jpeg, 'me.jpg', 'image/jpeg')).avatarUrl as string
  return { app, owner, child, files, avatar }
}

/** A request sent as written, so that no client tidies the path first. */
function raw (port: number, target: string): Promise<{ status: number, type: string, body: string }> {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: target }, res => {
      let body = ''
      res.on('data', chunk => { body += chunk })
      res.on('end', () => resolve({ status: res.statusCode as number, type: String(res.headers['content-type']), body }))
    }).on('error', reject)
  })
}

t.test('stored files are served by name, with their type and the cache and security headers', async t => {
  const { app, files, avatar } = await setup(t)
  for (const [label, file, type] of [['the PNG', files.png, 'image/png'], ['the PDF', files.pdf, 'application/pdf']] as const) {
    const res = await app.inject({ method: 'GET', url: file.attachment.url })
    t.equal(res.statusCode, 200, `${label} is served without a token`)
    t.equal(res.headers['content-type'], type, 'with the type detected at upload, not the declared one')
    t.same(res.rawPayload, file.bytes)
    t.equal(res.headers['x-content-type-options'], 'nosniff')
    t.equal(res.headers['cache-control'], 'private, max-age=31536000, immutable')
    t.equal(res.headers['cross-origin-resource-policy'], 'same-origin', 'same-origin without CORS_ORIGIN')
    t.ok(res.headers['x-request-id'])
    const head = await app.inject({ method: 'HEAD', url: file.attachment.url })
    t.equal(head.statusCode, 200, 'HEAD too')
    t.equal(head.headers['content-length'], String(file.bytes.length))
    t.equal(head.body, '')
  }
  const res = await app.inject({ method: 'GET', url: avatar })
  t.equal(res.statusCode, 200, 'the avatar')
  t.equal(res.headers['content-type'], 'image/webp')
  t.equal(res.headers['x-content-type-options'], 'nosniff')
  t.equal(res.headers['cache-control'], 'private, max-age=31536000, immutable')
})

/** A PDF that runs JavaScript when opened and carries an HTML file. */
const ACTIVE_PDF = Buffer.from([
  '%PDF-1.7',
  '1 0 obj << /Type /Catalog /Pages 2 0 R /OpenAction 3 0 R /Names << /EmbeddedFiles << /Names [(page.html) 4 0 R] >> >> >> endobj',
  '2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj',
  '3 0 obj << /S /JavaScript /JS (app.alert\\(document.cookie\\)) >> endobj',
  '4 0 obj << /Type /Filespec /F (page.html) /EF << /F 5 0 R >> >> endobj',
  '5 0 obj << /Type /EmbeddedFile /Subtype /text#2Fhtml /Length 52 >> stream',
  '<html><script>fetch("/api/me")</script></html>',
  'endstream endobj',
  'trailer << /Root 1 0 R >>',
  '%%EOF',
  ''
].join('\n'))

t.test('stored files are served in a sandbox: nothing in them runs on the service\'s origin', async t => {
  const { app, owner, child, files, avatar } = await setup(t)
  const active = await post(app, owner, `/api/children/${child.id}/attachments`, ACTIVE_PDF, 'active.pdf', 'application/pdf')
  const sandbox = "default-src 'none'; sandbox"
  for (const url of [active.url, files.png.attachment.url, files.pdf.attachment.url, avatar]) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 200, url)
    t.equal(res.headers['content-security-policy'], sandbox, 'in a sandbox, with nothing allowed')
    t.equal(res.headers['x-content-type-options'], 'nosniff')
  }
  const head = await app.inject({ method: 'HEAD', url: active.url })
  t.equal(head.headers['content-security-policy'], sandbox, 'HEAD says the same')
  for (const url of ['/uploads/0123456789abcdef0123456789abcdef.pdf', '/avatars/missing.webp', '/uploads/a/b']) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 404, url)
    t.equal(res.headers['content-security-policy'], sandbox, 'a missing file\'s answer too')
  }
  const api = await app.inject({ method: 'GET', url: '/api/health' })
  t.not(api.headers['content-security-policy'], sandbox, 'the API keeps helmet\'s policy')
})

t.test('a file is shown under the name it was uploaded with', async t => {
  const { app, owner, child, avatar } = await setup(t)
  const cases: Array<[string, string]> = [
    ['Röntgen befund (links).pdf', `inline; filename="rontgen-befund-links.pdf"; filename*=UTF-8''R%C3%B6ntgen%20befund%20%28links%29.pdf`],
    ["report; final's.pdf", `inline; filename="report-final-s.pdf"; filename*=UTF-8''report%3B%20final%27s.pdf`],
    ['scan.pdf', `inline; filename="scan.pdf"; filename*=UTF-8''scan.pdf`]
  ]
  for (const [name, disposition] of cases) {
    const created = await post(app, owner, `/api/children/${child.id}/attachments`, PDF, name, 'application/pdf')
    const res = await app.inject({ method: 'GET', url: created.url })
    t.equal(res.statusCode, 200)
    t.equal(res.headers['content-disposition'], disposition, name)
    t.equal(res.headers['x-content-type-options'], 'nosniff', 'still nosniff')
  }
  const today = new Date().toISOString().slice(0, 10)
  const blob = await post(app, owner, `/api/children/${child.id}/attachments`, PDF, 'blob', 'application/octet-stream')
  t.equal(blob.fileName, `attachment-${today}.pdf`, 'a Blob sent without a name is named from its type and the day')
  const served = await app.inject({ method: 'GET', url: blob.url })
  t.equal(served.headers['content-disposition'], `inline; filename="attachment-${today}.pdf"; filename*=UTF-8''attachment-${today}.pdf`)
  t.equal((await app.inject({ method: 'GET', url: avatar })).headers['content-disposition'], `inline; filename="avatar.webp"; filename*=UTF-8''avatar.webp`, 'an avatar as avatar.webp')
})

t.test('with CORS_ORIGIN the files may be shown on the allowed origins', async t => {
  const { app, files, avatar } = await setup(t, { CORS_ORIGIN: 'https://app.example.org' })
  for (const url of [files.png.attachment.url, avatar]) {
    const res = await app.inject({ method: 'GET', url, headers: { origin: 'https://app.example.org' } })
    t.equal(res.statusCode, 200)
    t.equal(res.headers['cross-origin-resource-policy'], 'cross-origin', url)
  }
  const api = await app.inject({ method: 'GET', url: '/api/health' })
  t.equal(api.headers['cross-origin-resource-policy'], 'same-origin', 'the API itself keeps same-origin')
})

t.test('a missing file, a listing or a way out of the directory is a 404 NOT_FOUND', async t => {
  const { app, files } = await setup(t)
  const notFound = { error: 'File not found', code: 'NOT_FOUND', details: {} }
  mkdirSync(path.join(app.config.uploadDir, 'folder'))
  writeFileSync(path.join(app.config.uploadDir, 'folder', 'inside.png'), 'x')
  writeFileSync(path.join(app.config.uploadDir, '.upload-0123456789abcdef0123456789abcdef.part'), 'half')
  writeFileSync(path.join(app.config.uploadDir, '.hidden.png'), 'x')
  writeFileSync(path.join(app.config.uploadDir, '..', 'outside.json'), '{}')

  const stored = path.basename(files.png.attachment.url)
  const attempts = [
    '/uploads/0123456789abcdef0123456789abcdef.png',
    `/avatars/${stored}`,
    '/uploads/folder',
    '/uploads/folder/',
    '/uploads/folder/inside.png',
    '/uploads/.upload-0123456789abcdef0123456789abcdef.part',
    '/uploads/.hidden.png',
    '/uploads/',
    '/uploads',
    '/avatars/',
    '/uploads/..%2foutside.json',
    '/uploads/..%2F..%2Fpackage.json',
    '/uploads/%2e%2e%2foutside.json',
    '/uploads/..%5coutside.json',
    '/uploads/%00',
    `/uploads/${stored}%00.png`
  ]
  for (const url of attempts) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 404, url)
    t.same(res.json(), notFound)
  }

  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  for (const target of [
    '/uploads/../package.json',
    '/uploads/../outside.json',
    '/uploads/%2e%2e/package.json',
    '/uploads/%2E%2E/outside.json',
    '/uploads/..%2fpackage.json',
    '/uploads/.%2e/.%2e/package.json',
    '/uploads/..\\outside.json',
    '/avatars/../uploads/' + stored,
    '/uploads//etc/passwd',
    '/uploads/'
  ]) {
    const res = await raw(port, target)
    t.equal(res.status, 404, `${target} as sent`)
    t.match(res.type, /^application\/json/)
    t.same(JSON.parse(res.body), notFound)
  }
  t.equal((await raw(port, files.png.attachment.url)).status, 200, 'the file itself is served over HTTP')
})

t.test('a deleted file is no longer served, and the directories are made at start', async t => {
  const { app, owner, files } = await setup(t)
  t.ok(existsSync(app.config.uploadDir) && existsSync(app.config.avatarDir))
  const res = await call(app, owner, 'DELETE', `/api/attachments/${files.pdf.attachment.id}`)
  t.equal(res.statusCode, 204)
  t.equal((await app.inject({ method: 'GET', url: files.pdf.attachment.url })).statusCode, 404)
})

t.test('the OpenAPI document describes the file routes as public', async t => {
  const app = await build(t)
  const doc = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  for (const [url, operationId] of [['/uploads/{name}', 'getUpload'], ['/avatars/{name}', 'getAvatar']]) {
    const get = doc.paths[url].get
    t.equal(get.operationId, operationId)
    t.same(get.tags, ['files'])
    t.same(get.security, [], 'no token')
    t.ok(get.responses['200'].content['image/webp'])
    t.ok(get.responses['404'])
  }
  t.ok(doc.paths['/uploads/{name}'].get.responses['200'].content['application/pdf'])
})
