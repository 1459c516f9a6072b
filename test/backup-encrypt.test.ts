import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { Sql } from '../db/client'
import { HEADER_BYTES, MAGIC, openEncrypted, sealer } from '../db/backup/encryption'
import { pruneBackups } from '../db/backup/target'
import { tempDir } from './helper'
import { instance, kept, rows, type Instance } from './backup-helpers'
import { cli, succeeds, type Run } from './processes'

const PASSPHRASE = 'marmalade sky 42'
const DAMAGED = /^the backup is damaged: .*; nothing was restored$/

function lastLine (run: Run): string | undefined {
  return run.stderr.trim().split('\n').at(-1)
}

const attachment = randomBytes(300_000)
const EMAIL = 'ada.lovelace@example.org'
const NOTES = 'Quokkaberry rash on the left arm'

/** A family with records, a signed-in user and a stored file: what a backup holds that must stay private. */
async function fill (sql: Sql, { uploads }: Instance): Promise<void> {
  await sql`
    insert into users (email, password_hash, name, role) values
      (${EMAIL}, '$2a$10$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234', 'Ada', 'admin')
  `
  await sql`insert into families (name) values ('Lovelace')`
  await sql`insert into family_members (family_id, user_id, role) values (1, 1, 'owner')`
  await sql`insert into sessions (user_id, user_agent, expires_at) values (1, 'Mozilla/5.0', now() + interval '7 days')`
  await sql`insert into children (family_id, name, date_of_birth, sex) values (1, ${'Zoë 🎈'}, '2020-02-29', 'female')`
  await sql`insert into visits (child_id, date, type, provider, notes) values (1, '2021-01-05', 'sick', 'Dr. Who', ${NOTES})`
  await sql`
    insert into attachments (child_id, visit_id, file_name, stored_name, content_type, size_bytes) values
      (1, 1, 'report.pdf', 'att-1.pdf', 'application/pdf', ${attachment.length})
  `
  mkdirSync(uploads, { recursive: true })
  writeFileSync(path.join(uploads, 'att-1.pdf'), attachment)
}

/** Every file under a folder, by its path in it. */
function tree (dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort() : []
}

async function stillEmpty (t: Test, target: Instance): Promise<void> {
  const all = await rows(target.db.sql)
  t.ok(Object.entries(all).every(([table, list]) => table === 'migrations' || list.length === 0), 'the database is still empty')
  t.same([...tree(target.uploads), ...tree(target.avatars)], [], 'and no file was written')
}

async function sealBytes (plain: Buffer, passphrase: string, chunkBytes: number): Promise<Buffer> {
  const out: Buffer[] = []
  // Written in odd pieces, so that chunks do not follow the writes.
  const pieces = [plain.subarray(0, 777), plain.subarray(777, 3000), plain.subarray(3000)]
  await pipeline(Readable.from(pieces), (await sealer(passphrase, { chunkBytes })).stream(), async function * (source) {
    for await (const chunk of source) out.push(chunk)
  })
  return Buffer.concat(out)
}

async function openBytes (dir: string, bytes: Buffer, passphrase: string): Promise<Buffer> {
  const file = path.join(dir, `${randomBytes(4).toString('hex')}.enc`)
  writeFileSync(file, bytes)
  const source = await openEncrypted(file, passphrase)
  const out: Buffer[] = []
  for await (const chunk of source.open()) out.push(chunk)
  const plain = Buffer.concat(out)
  if (plain.length !== source.size) throw new Error(`the source said ${source.size} bytes, it gave ${plain.length}`)
  return plain
}

async function refusal (promise: Promise<unknown>): Promise<string> {
  try {
    await promise
  } catch (error) {
    return (error as Error).message
  }
  return 'opened'
}

t.test('the encrypted format: round trips at every chunk edge, and refuses every change', async t => {
  const dir = tempDir(t)
  const chunk = 1024
  const frame = chunk + 16
  for (const size of [0, 1, chunk - 1, chunk, chunk + 1, 4 * chunk, 4 * chunk + 5]) {
    const plain = randomBytes(size)
    const sealed = await sealBytes(plain, PASSPHRASE, chunk)
    t.equal(sealed.length, HEADER_BYTES + Math.max(1, Math.ceil(size / chunk)) * 16 + size, `${size} bytes: a header and one tag a chunk`)
    t.ok((await openBytes(dir, sealed, PASSPHRASE)).equals(plain), `${size} bytes come back as they were`)
  }

  const plain = randomBytes(4 * chunk)
  const sealed = await sealBytes(plain, PASSPHRASE, chunk)
  t.ok(sealed.subarray(0, MAGIC.length).equals(Buffer.from('CHBACKUP-ENC1\n')), 'the file starts with the magic')
  t.same([sealed[14], sealed[15], sealed[16], sealed.readUInt32BE(17)], [15, 8, 1, chunk], 'then scrypt N = 2^15, r = 8, p = 1 and the chunk size')
  const again = await sealBytes(plain, PASSPHRASE, chunk)
  t.not(again.subarray(21, 45).toString('hex'), sealed.subarray(21, 45).toString('hex'), 'each backup has its own salt and nonce prefix')
  t.equal(again.subarray(HEADER_BYTES).indexOf(plain.subarray(0, 64)), -1, 'and no plaintext in it')

  const flip = (at: number): Buffer => { const copy = Buffer.from(sealed); copy[at] ^= 0x01; return copy }
  const body = (index: number): Buffer => sealed.subarray(HEADER_BYTES + index * frame, HEADER_BYTES + (index + 1) * frame)
  const cases: Array<[string, Buffer, RegExp]> = [
    ['cut at a chunk edge', sealed.subarray(0, HEADER_BYTES + 3 * frame), DAMAGED],
    ['cut inside a chunk', sealed.subarray(0, sealed.length - 100), DAMAGED],
    ['cut inside the header', sealed.subarray(0, 40), DAMAGED],
    ['cut after the header', sealed.subarray(0, HEADER_BYTES), DAMAGED],
    ['lengthened', Buffer.concat([sealed, Buffer.alloc(32)]), DAMAGED],
    ['a byte changed in the first chunk', flip(HEADER_BYTES + 10), DAMAGED],
    ['a byte changed in a tag', flip(sealed.length - 1), DAMAGED],
    ['a byte changed in the salt', flip(25), DAMAGED],
    ['two chunks swapped', Buffer.concat([sealed.subarray(0, HEADER_BYTES), body(1), body(0), body(2), body(3)]), DAMAGED]
  ]
  for (const [what, bytes, message] of cases) t.match(await refusal(openBytes(dir, bytes, PASSPHRASE)), message, `${what} is refused`)
  t.equal(await refusal(openBytes(dir, sealed, 'marmalade sky 43')), 'the passphrase does not open this backup', 'and so is a wrong passphrase')
})

t.test('pruning keeps the newest backups, plain and encrypted together, and nothing else is touched', async t => {
  const dir = tempDir(t)
  const names = ['child-health-20200101-000000.tar', 'child-health-20200102-000000.tar.enc', 'child-health-20200103-000000.tar', 'child-health-20200104-000000.tar.enc']
  const others = ['notes.txt', 'child-health-20190101-000000.tar.enc.partial', 'child-health-20190101-000000.enc', 'child-health-20190101-000000.tar.encx']
  for (const name of [...names, ...others]) writeFileSync(path.join(dir, name), 'x')
  mkdirSync(path.join(dir, 'child-health-20180101-000000.tar.enc'))
  t.same(await pruneBackups(dir, 2), ['child-health-20200102-000000.tar.enc', 'child-health-20200101-000000.tar'], 'the two oldest backups are removed')
  t.same(readdirSync(dir).sort(), [...names.slice(2), ...others, 'child-health-20180101-000000.tar.enc'].sort(), 'the rest is all there')
})

t.test('an encrypted backup holds no plaintext and restores with its passphrase alone', async t => {
  const source = await instance(t)
  await fill(source.db.sql, source)
  const before = await rows(source.db.sql)
  const archive = path.join(source.dir, 'nightly.backup')

  // One line break after the passphrase, as `echo` gives, is not part of it.
  const backup = await cli(['backup', '--out', archive, '--encrypt'], source.env, `${PASSPHRASE}\n`)
  succeeds(t, backup, 'an encrypted backup succeeds')
  t.match(backup.stdout, /^backup written to .*nightly\.backup, encrypted: /, 'under the name given, and says it is encrypted')
  t.same(readdirSync(source.dir).filter(name => name.startsWith('nightly')), ['nightly.backup'], 'nothing else is left beside it')
  t.equal(statSync(archive).mode & 0o777, 0o600, 'readable by its owner only')

  const bytes = readFileSync(archive)
  t.ok(bytes.subarray(0, MAGIC.length).equals(MAGIC), 'it starts with the encrypted header')
  t.not(bytes.subarray(257, 262).toString('latin1'), 'ustar', 'not with a tar header')
  for (const [what, plain] of [['the e-mail address', EMAIL], ['the visit notes', 'Quokkaberry'], ['the password hash', '$2a$10$abcdefghij'], ['a table name', 'tables/users.copy'], ['the manifest', 'child-health-backup']]) {
    t.equal(bytes.indexOf(Buffer.from(plain)), -1, `${what}: not in it`)
  }
  t.equal(bytes.indexOf(attachment.subarray(1000, 1032)), -1, 'nor the stored file')

  const target = await instance(t, { empty: true })
  const restore = (file: string, input: string | null): Promise<Run> => cli(['restore', '--in', file], target.env, input)

  const wrong = await restore(archive, 'marmalade sky 43')
  t.equal(wrong.code, 1, 'a wrong passphrase is refused')
  t.equal(wrong.stderr.trim(), 'the passphrase does not open this backup', 'in one line')
  await stillEmpty(t, target)

  for (const input of [null, '', '\n']) {
    const none = await restore(archive, input)
    t.equal(none.code, 2, `without a passphrase (${JSON.stringify(input)}) it is refused as a usage error`)
    t.equal(none.stderr.trim(), 'this backup is encrypted: give its passphrase on standard input', 'saying what to do')
  }

  const frame = 64 * 1024 + 16
  const damaged: Array<[string, Buffer]> = [
    ['cut at a chunk edge', bytes.subarray(0, HEADER_BYTES + 2 * frame)],
    ['cut inside a chunk', bytes.subarray(0, bytes.length - 1000)],
    ['a byte changed in the middle', (() => { const copy = Buffer.from(bytes); copy[Math.floor(copy.length / 2)] ^= 0x01; return copy })()],
    ['a byte changed in the last chunk', (() => { const copy = Buffer.from(bytes); copy[copy.length - 20] ^= 0x80; return copy })()]
  ]
  for (const [what, content] of damaged) {
    const file = path.join(source.dir, 'damaged.backup')
    writeFileSync(file, content)
    const run = await restore(file, PASSPHRASE)
    t.equal(run.code, 1, `${what}: refused`)
    t.match(lastLine(run), DAMAGED, 'as damaged')
    await stillEmpty(t, target)
  }
  const left = [...tree(source.dir), ...tree(target.dir)].filter(name => !['uploads', 'uploads/att-1.pdf', 'nightly.backup', 'damaged.backup'].includes(name))
  t.same(left, [], 'no decrypted copy is left anywhere')

  const restored = await restore(archive, PASSPHRASE)
  succeeds(t, restored, 'with its passphrase the backup restores')
  t.match(restored.stderr, /every checksum matches/, 'after checking every checksum')
  t.same(kept(await rows(target.db.sql)), kept(before), 'every row of every table is identical, but for the versions')
  t.ok(readFileSync(path.join(target.uploads, 'att-1.pdf')).equals(attachment), 'and the stored file, byte for byte')
})

t.test('encrypted backups into a folder are named .enc and pruned with the plain ones', async t => {
  const source = await instance(t)
  const folder = path.join(source.dir, 'backups')
  mkdirSync(folder)
  const old = ['child-health-20200101-000000.tar', 'child-health-20200102-000000.tar.enc', 'child-health-20200103-000000.tar.enc']
  for (const name of [...old, 'notes.txt', 'child-health-20200104-000000.tar.enc.partial']) writeFileSync(path.join(folder, name), 'old')

  const run = await cli(['backup', '--out', folder, '--keep', '2', '--encrypt'], source.env, PASSPHRASE)
  succeeds(t, run, 'an encrypted backup into a folder succeeds')
  t.match(run.stderr, /removed the old backup child-health-20200102-000000\.tar\.enc/, 'saying what it removed')
  const names = readdirSync(folder).sort()
  const made = names.filter(name => !old.includes(name) && !['notes.txt', 'child-health-20200104-000000.tar.enc.partial'].includes(name))
  t.match(made, [/^child-health-\d{8}-\d{6}\.tar\.enc$/], 'the new backup is named .tar.enc')
  t.same(names, ['child-health-20200103-000000.tar.enc', 'child-health-20200104-000000.tar.enc.partial', made[0], 'notes.txt'].sort(),
    'beside the newest old backup and the files that are not backups')
  t.ok(readFileSync(path.join(folder, made[0])).subarray(0, MAGIC.length).equals(MAGIC), 'it is encrypted')
})

t.test('a new backup\'s passphrase must be given and long enough, or nothing is written', async t => {
  const source = await instance(t)
  const folder = path.join(source.dir, 'backups')
  const file = path.join(source.dir, 'one.tar.enc')
  const cases: Array<[string[], string | null, string]> = [
    [['--out', `${folder}/`], '', 'an encrypted backup needs a passphrase: give it on standard input'],
    [['--out', file], '\n', 'an encrypted backup needs a passphrase: give it on standard input'],
    [['--out', folder, '--keep', '2'], null, 'an encrypted backup needs a passphrase: give it on standard input'],
    [['--out', file], 'seven77\n', 'the passphrase is too short: use at least 8 characters']
  ]
  for (const [args, input, message] of cases) {
    const run = await cli(['backup', ...args, '--encrypt'], source.env, input)
    t.equal(run.code, 2, `${JSON.stringify(input)}: refused as a usage error`)
    t.equal(run.stderr.trim(), message, 'in one line')
    t.notOk(existsSync(folder) || existsSync(file), 'and nothing is written')
  }
  t.same(tree(source.dir), [], 'not even a partial file')
})
