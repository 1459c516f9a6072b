import t, { type Test } from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { createReadStream, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import type { Writable } from 'node:stream'
import tar from 'tar-stream'
import type { Sql } from '../db/client'
import { instance, kept, rows, TRACKED, type Instance } from './backup-helpers'
import { cli, succeeds } from './processes'

const RECORD_TABLES = ['users', 'families', 'family_members', 'children', 'visits', 'measurements', 'medical_events', 'illnesses', 'temperatures', 'attachments', 'sessions', 'refresh_tokens', 'invites']

const attachment = randomBytes(200_000)
const scan = randomBytes(5_000)
const avatar = randomBytes(30_000)

/** A family's records of every kind, with values that are easy to get wrong: tabs, quotes, line breaks, emoji, exact decimals, ids with a gap. */
async function fill (sql: Sql, { uploads, avatars }: Instance): Promise<void> {
  await sql`
    insert into users (email, password_hash, name, role, disabled, last_login_at) values
      ('ada@example.org', '$2a$10$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234', 'Ada', 'admin', false, '2024-03-01 10:00:00.123456+00'),
      ('bo@example.org', 'hash\\with\\backslashes', ${'Bo "the\ttab" O\'Neil'}, 'user', true, null)
  `
  await sql`insert into families (name) values ('Lovelace'), (${'Zweite Familie\nmit Umbruch'})`
  await sql`insert into family_members (family_id, user_id, role) values (1, 1, 'owner'), (1, 2, 'viewer'), (2, 2, 'owner')`
  await sql`
    insert into sessions (user_id, user_agent, expires_at, revoked_at) values
      (1, 'Mozilla/5.0', now() + interval '7 days', null),
      (2, null, now() + interval '7 days', now())
  `
  await sql`
    insert into refresh_tokens (session_id, user_id, token_hash, replaces_id, expires_at, rotated_at) values
      (1, 1, 'hash-one', null, now() + interval '7 days', now()),
      (1, 1, 'hash-two', 1, now() + interval '7 days', null)
  `
  await sql`
    insert into invites (family_id, email, role, token_hash, invited_by, expires_at, used_at, used_by, revoked_at) values
      (1, 'carla@example.org', 'member', 'invite-one', 1, now() + interval '7 days', null, null, null),
      (1, 'bo@example.org', 'viewer', 'invite-two', 1, now() + interval '7 days', now(), 2, null)
  `
  await sql`
    insert into children (family_id, name, date_of_birth, sex, gestational_age_weeks, gestational_age_days, avatar_name, avatar_size_bytes) values
      (1, ${'Zoë 🎈'}, '2020-02-29', 'female', 31, 4, 'avatar-1.png', ${avatar.length}),
      (2, 'Max', '2019-12-31', 'male', null, null, null, null)
  `
  await sql`
    insert into visits (child_id, date, type, provider, notes) values
      (1, '2021-01-05', 'wellness', 'Dr. Who', ${'line one\nline two\\ and a backslash'}),
      (1, '2021-03-01', 'sick', null, null),
      (2, '2021-04-01', 'dental', 'Smile', 'gone')
  `
  await sql`delete from visits where id = 3`
  await sql`
    insert into measurements (child_id, visit_id, measured_at, height_cm, weight_kg, head_circumference_cm, notes) values
      (1, 1, '2021-01-05', 80.25, 10.125, 45.5, null),
      (1, null, '2021-06-01', null, 3.456, null, 'weight only')
  `
  await sql`
    insert into medical_events (child_id, visit_id, date, type, name, description, dose_number, lot_number, site, next_due_date) values
      (1, 1, '2021-01-05', 'vaccine', 'MMR', null, 2, ${'Lot; "7"\tß'}, 'Left thigh', '2021-07-05'),
      (1, null, '2021-02-01', 'medication', 'Ibuprofen', '200 mg', null, null, null, null),
      (2, null, '2021-02-02', 'procedure', 'Stitches', null, null, null, null, null)
  `
  await sql`
    insert into illnesses (child_id, visit_id, start_date, end_date, diagnosis, symptoms, medications, temperature_c, notes) values
      (1, 2, '2021-02-27', '2021-03-03', 'Flu', 'Fever, cough', 'Paracetamol', 38.75, null),
      (1, null, '2021-07-01', null, null, null, null, null, null)
  `
  // Readings of the flu: their highest is kept on the illness.
  await sql`
    insert into temperatures (child_id, illness_id, taken_at, temperature_c, method, notes) values
      (1, 1, '2021-02-27 21:15:30.25+01', 39.25, 'rectal', ${'Night; "hot"\tß'}),
      (1, 1, '2021-02-28 08:00:00+00', 38.1, null, null)
  `
  await sql`
    insert into attachments (child_id, visit_id, measurement_id, illness_id, file_name, stored_name, content_type, size_bytes) values
      (1, 1, 1, null, 'report.pdf', 'att-1.pdf', 'application/pdf', ${attachment.length}),
      (1, 2, null, 1, 'scan.jpg', '2021/scan.jpg', 'image/jpeg', ${scan.length})
  `
  mkdirSync(path.join(uploads, '2021'), { recursive: true })
  mkdirSync(avatars, { recursive: true })
  writeFileSync(path.join(uploads, 'att-1.pdf'), attachment)
  writeFileSync(path.join(uploads, '2021', 'scan.jpg'), scan)
  writeFileSync(path.join(uploads, 'empty.txt'), '')
  writeFileSync(path.join(avatars, 'avatar-1.png'), avatar)
}

/** The restore's own record: every family a new epoch, and every row of the tracked tables one change, for no user. */
async function checkRestoreRecorded (t: Test, sql: Sql, before: Record<string, string[]>): Promise<void> {
  const after = await rows(sql)
  const oldChanges = new Set(before.changes)
  t.ok(before.changes.every(change => after.changes.includes(change)), 'the backup\'s changes are all there')
  const added = after.changes.filter(change => !oldChanges.has(change)).map(change => JSON.parse(change))
  const tracked = TRACKED.reduce((sum, table) => sum + before[table].length, 0)
  t.equal(added.length, tracked, `the restore records one change a row (${tracked})`)
  t.ok(added.every(change => change.op === 'updated' && change.user_id === null), 'each an update by no user')
  const epochs = (list: string[]) => list.map(row => JSON.parse(row).epoch)
  t.ok(epochs(after.family_clocks).every(epoch => !epochs(before.family_clocks).includes(epoch)), 'and every family a new epoch')
  const counted = await sql`
    select f.id, family_changes(f.id)::int as kept, (select count(*)::int from changes c where c.family_id = f.id) as counted from families f
  `
  t.ok(counted.length > 0 && counted.every(row => row.kept === row.counted), 'the kept counts of changes follow the log')
  const totals = await sql`
    select c.id, t.name, child_rows(c.id, t.name)::int as kept,
      (xpath('/row/n/text()', query_to_xml(format('select count(*) as n from %I where child_id = %s', t.name, c.id), false, true, '')))[1]::text::int as counted
    from children c cross join unnest(array['visits', 'measurements', 'medical_events', 'illnesses', 'attachments', 'temperatures']) t (name)
  `
  t.ok(totals.length > 0 && totals.every(row => row.kept === row.counted), 'the kept totals of every child\'s lists follow the rows')
  const children = await sql`select f.id, family_children(f.id)::int as kept, (select count(*)::int from children c where c.family_id = f.id) as counted from families f`
  t.ok(children.every(row => row.kept === row.counted), 'and those of every family\'s children')
}

/** Every stored file, by its place under the upload or avatar folder. */
function files ({ uploads, avatars }: Instance): Map<string, Buffer> {
  const found = new Map<string, Buffer>()
  const walk = (dir: string, prefix: string): void => {
    if (!existsSync(dir)) return
    for (const item of readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, item.name)
      if (item.isDirectory()) walk(file, `${prefix}${item.name}/`)
      else found.set(`${prefix}${item.name}`, readFileSync(file))
    }
  }
  walk(uploads, 'uploads/')
  walk(avatars, 'avatars/')
  return found
}

async function manifestOf (archive: string): Promise<any> {
  const extract = tar.extract()
  createReadStream(archive).pipe(extract as unknown as Writable)
  let manifest = null
  for await (const entry of extract) {
    const chunks: Buffer[] = []
    for await (const chunk of entry) chunks.push(chunk as Buffer)
    if (entry.header.name === 'manifest.json') manifest = JSON.parse(Buffer.concat(chunks).toString('utf8'))
  }
  return manifest
}

/** A copy of the archive with one byte changed inside the first occurrence of `marker`. */
function corrupt (archive: string, marker: Buffer, name: string): string {
  const bytes = readFileSync(archive)
  const at = bytes.indexOf(marker)
  if (at === -1) throw new Error('marker not found in the archive')
  bytes[at + Math.floor(marker.length / 2)] ^= 0x01
  const copy = path.join(path.dirname(archive), name)
  writeFileSync(copy, bytes)
  return copy
}

async function empty (t: Test, target: Instance): Promise<void> {
  const all = await rows(target.db.sql)
  for (const [table, list] of Object.entries(all)) if (table !== 'migrations') t.same(list, [], `${table} is still empty`)
  t.equal(files(target).size, 0, 'and no file was written')
  const leftovers = [target.uploads, target.avatars].filter(existsSync).flatMap(dir => readdirSync(dir, { recursive: true, encoding: 'utf8' }))
  t.same(leftovers.filter(name => name.includes('.restore-')), [], 'not even a temporary one')
}

t.test('a backup restores into an empty instance with every row and every file identical', async t => {
  const source = await instance(t)
  await fill(source.db.sql, source)
  const before = await rows(source.db.sql)
  for (const table of RECORD_TABLES) t.ok(before[table].length > 0, `the instance has ${table}`)

  const archive = path.join(source.env.DATA_DIR, 'backup.tar')
  const backup = await cli(['backup', '--out', archive], source.env)
  succeeds(t, backup, 'backup succeeds')
  t.match(backup.stdout, /^backup written to .*backup\.tar: \d+ rows in \d+ tables, 4 files/, 'and sums up what it wrote')
  t.match(backup.stderr, /backup: users: 2 rows/, 'progress goes to stderr')
  t.equal(statSync(archive).mode & 0o777, 0o600, 'the archive is readable by its owner only')
  t.same(readdirSync(source.env.DATA_DIR).filter(name => name.startsWith('backup.tar')), ['backup.tar'], 'no partial or spool file is left')

  const manifest = await manifestOf(archive)
  t.same(manifest.schemaVersion, before.migrations, 'the manifest names the schema version')
  t.ok(!Number.isNaN(Date.parse(manifest.createdAt)), 'and the time')
  for (const table of manifest.tables) t.equal(table.rows, before[table.name].length, `and the ${table.name} rows`)
  t.same(manifest.tables.map((table: { name: string }) => table.name).sort(), Object.keys(before).filter(name => name !== 'migrations'), 'of every table')
  const sums = Object.fromEntries([...files(source)].map(([name, content]) => [name, createHash('sha256').update(content).digest('hex')]))
  t.same(Object.fromEntries(manifest.files.map((item: { entry: string, sha256: string }) => [item.entry, item.sha256])), sums, 'and the SHA-256 of every file')

  const target = await instance(t, { empty: true })
  const restored = await cli(['restore', '--in', archive], target.env)
  succeeds(t, restored, 'restore into an empty migrated instance succeeds')
  t.match(restored.stderr, /every checksum matches/, 'after checking every checksum')
  const restoredRows = await rows(target.db.sql)
  t.same(kept(restoredRows), kept(before), 'every row of every table is identical, but for the versions')
  await checkRestoreRecorded(t, target.db.sql, before)
  t.same(files(target), files(source), 'every file is identical, byte for byte')

  const again = await cli(['restore', '--in', archive], target.env)
  t.not(again.code, 0, 'restoring into a non-empty instance is refused')
  t.match(again.stderr, /this instance is not empty: its database has records; restore with --replace/, 'saying why')
  t.same(await rows(target.db.sql), restoredRows, 'and changes nothing')

  await target.db.sql`delete from measurements`
  await target.db.sql`update children set name = 'Renamed'`
  writeFileSync(path.join(target.uploads, 'stray.bin'), 'not in the backup')
  const replaced = await cli(['restore', '--in', archive, '--replace'], target.env)
  succeeds(t, replaced, 'restore --replace succeeds')
  t.same(kept(await rows(target.db.sql)), kept(before), 'with --replace the instance becomes the backup again')
  await checkRestoreRecorded(t, target.db.sql, before)
  t.same(files(target), files(source), 'files included, and the stray file is gone')

  for (const instance of [source, target]) {
    const [visit] = await instance.db.sql`insert into visits (child_id, date, type) values (1, '2022-01-01', 'vision') returning id`
    const [user] = await instance.db.sql`insert into users (email, password_hash, name) values ('new@example.org', 'x', 'New') returning id`
    t.same([visit.id, user.id], [4, 3], 'new records get the next ids, never a used one')
  }
})

t.test('a damaged archive is refused before anything is written', async t => {
  const source = await instance(t)
  await fill(source.db.sql, source)
  const archive = path.join(source.env.DATA_DIR, 'backup.tar')
  succeeds(t, await cli(['backup', '--out', archive], source.env), 'the backup is written')

  const cases: Array<[string, string, RegExp]> = [
    [corrupt(archive, attachment.subarray(1000, 1064), 'file.tar'), 'a changed byte in a file', /^the archive is damaged: uploads\/att-1\.pdf does not match its checksum; nothing was restored$/],
    [corrupt(archive, Buffer.from('bo@example.org\thash'), 'rows.tar'), 'a changed byte in the rows', /^the archive is damaged: tables\/users\.copy does not match its checksum; nothing was restored$/],
    [corrupt(archive, Buffer.from('"formatVersion"'), 'manifest.tar'), 'a changed byte in the manifest', /^the archive is damaged: the manifest does not match its checksum/]
  ]
  const truncated = path.join(source.env.DATA_DIR, 'truncated.tar')
  writeFileSync(truncated, readFileSync(archive).subarray(0, 150_000))
  cases.push([truncated, 'a truncated archive', /^the archive is damaged/])

  for (const [file, what, message] of cases) {
    const target = await instance(t, { empty: true })
    const run = await cli(['restore', '--in', file], target.env)
    t.not(run.code, 0, `${what} is refused`)
    t.match(run.stderr.trim().split('\n').at(-1), message, 'naming what is damaged')
    await empty(t, target)
  }
})

t.test('restore refuses an instance of another schema version', async t => {
  const source = await instance(t)
  await fill(source.db.sql, source)
  const archive = path.join(source.env.DATA_DIR, 'backup.tar')
  succeeds(t, await cli(['backup', '--out', archive], source.env), 'the backup is written')

  const bare = await instance(t, { empty: true, migrated: false })
  const unmigrated = await cli(['restore', '--in', archive], bare.env)
  t.not(unmigrated.code, 0, 'an unmigrated database is refused')
  t.match(unmigrated.stderr, /the database has no schema yet: run the migrate command first/, 'saying what to do')

  const newer = await instance(t, { empty: true })
  await newer.db.sql`insert into migrations (name) values ('29991231-235959-from-the-future.sql')`
  const run = await cli(['restore', '--in', archive], newer.env)
  t.not(run.code, 0, 'a database of another schema version is refused')
  t.match(run.stderr, /the backup is of schema version .* this database is at 29991231-235959-from-the-future\.sql .*restore into an instance migrated to the backup's version/, 'naming both versions')
  await empty(t, newer)
})

t.test('backup into a folder names each archive after its time and keeps the newest', async t => {
  const source = await instance(t)
  const folder = path.join(source.env.DATA_DIR, 'backups')
  mkdirSync(folder)
  for (const old of ['child-health-20200101-000000.tar', 'child-health-20200102-000000.tar', 'notes.txt']) writeFileSync(path.join(folder, old), 'old')
  const run = await cli(['backup', '--out', folder, '--keep', '2'], source.env)
  succeeds(t, run, 'a backup into a folder succeeds')
  const names = readdirSync(folder).sort()
  t.equal(names.length, 3, 'the newest two archives and the unrelated file are kept')
  t.equal(names[0], 'child-health-20200102-000000.tar', 'the newer old archive stays')
  t.match(names[1], /^child-health-\d{8}-\d{6}\.tar$/, 'beside the new one')
  t.equal(names[2], 'notes.txt', 'and the file it did not make')
  const refused = await cli(['backup', '--out', path.join(folder, 'notes.txt'), '--keep', '2'], source.env)
  t.match(refused.stderr, /--out .*notes\.txt is a file: name a folder to keep backups in/, '--keep with an existing file is refused')

  const fresh = path.join(source.env.DATA_DIR, 'new', 'nested')
  succeeds(t, await cli(['backup', '--out', `${fresh}/`], source.env), 'a name ending with a slash is a folder')
  t.match(readdirSync(fresh), [/^child-health-\d{8}-\d{6}\.tar$/], 'made if missing, with one archive in it')
  t.equal(statSync(fresh).mode & 0o777, 0o700, 'readable by its owner only')
  const kept = path.join(source.env.DATA_DIR, 'kept')
  succeeds(t, await cli(['backup', '--out', kept, '--keep', '3'], source.env), 'with --keep the name is a folder')
  t.match(readdirSync(kept), [/^child-health-\d{8}-\d{6}\.tar$/], 'made if missing too')
})
