import t from 'tap'
import { readdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { ORPHAN_AGE_MS, sweepOrphans } from '../io/files/sweep'
import { storedNamesInUse } from '../sql/attachments'
import { build, call, register, tempDir, TEST_ENV, type Pair } from './helper'
import { cli, created, exported, exportedFamily, familyView, footprint, importArchive, OPEN, pdf, rebuilt, startCli, upload, type App } from './import-helpers'

interface Source {
  source: App
  owner: Pair
  familyId: number
  archive: Buffer
}

let made: Promise<Source> | undefined

/** One family, made through the routes of one instance and exported, for every test here. */
function shared (): Promise<Source> {
  made ??= (async () => {
    const source = await build(t, { env: OPEN })
    return { source, ...await exportedFamily(source) }
  })()
  return made
}

t.test('a family exported from one instance reads back equal once imported into another', async t => {
  const { source, owner, familyId, archive } = await shared()
  const target = await build(t, { env: OPEN })
  const importer = await register(target)
  const res = await importArchive(target, importer, archive)
  t.equal(res.statusCode, 201, res.body)
  const answer = res.json()
  t.same(answer.counts, { children: 2, measurements: 6, visits: 6, medicalEvents: 4, illnesses: 4, temperatures: 4, medicineCourses: 0, medicineDoses: 0, allergies: 0, attachments: 6, files: 8 })
  t.equal(answer.family.name, 'Família Ødegård, "the first"')
  t.equal(answer.family.role, 'owner')
  t.equal(answer.family.memberCount, 1, 'the importer is its only member')
  t.equal(res.headers.location, `/api/families/${answer.family.id}`)

  const before = await familyView(source, owner, familyId)
  const after = await familyView(target, importer, answer.family.id)
  t.ok(before.children.every((child: { growth: unknown }) => Array.isArray(child.growth) && child.growth.length > 0), 'the growth answers have points')
  t.same(after, before, 'every child, record, link, file byte and growth answer is the same')
  const zoe = after.children.find((child: { name: string }) => child.name === 'Zoë')
  t.match(zoe, { gestationalAgeAtBirthWeeks: 33, gestationalAgeAtBirthDays: 2, growthReference: 'who' }, 'with the gestational age at birth')
  const ari = after.children.find((child: { name: string }) => child.name === 'Ari')
  t.match(ari, { growthReference: 'auto', scheduleId: 'us-routine' }, 'and the growth chart and the vaccine schedule chosen')
  t.match(ari['medical-events'].find((event: { type: string }) => event.type === 'vaccine'), { name: 'DTaP', vaccine: 'DTaP', doseNumber: 1 }, 'and the series of the dose')
  t.match(zoe, { scheduleId: null }, 'none for a child without one')
  t.ok(zoe.growth.some((point: { scoredAt: string }) => point.scoredAt === 'corrected'), 'and growth at the corrected age')
  t.same(zoe.temperatures, [
    { illnessId: 1, takenAt: '2022-01-08T06:30:00.000Z', temperatureC: 39.6, method: 'rectal', notes: 'At night' },
    { illnessId: 1, takenAt: '2022-01-09T18:00:00.000Z', temperatureC: 38.2, method: null, notes: null }
  ], 'with the flu\'s temperature readings, under the flu')
  t.match(zoe.illnesses[1], { diagnosis: 'Influenza', temperatureC: 39.6, maxTemperatureC: 39.6 }, 'whose highest reading the flu answers')

  const changes = await target.db.sql`select kind, op, user_id from changes where family_id = ${answer.family.id}`
  const records = changes.filter(change => !['family', 'member'].includes(change.kind as string))
  t.equal(records.length, 2 + 6 + 6 + 4 + 4 + 4 + 6, 'one change for each row written')
  t.ok(records.every(change => change.op === 'created' && change.user_id === importer.user.id), 'each a creation by the importer')

  const feed = await call(target, importer, 'GET', `/api/families/${answer.family.id}/changes`)
  t.equal(feed.statusCode, 200, 'the changes feed of the new family answers')

  const again = await importArchive(target, importer, archive)
  t.equal(again.statusCode, 201, 'the same archive imports again, as another family')
  t.not(again.json().family.id, answer.family.id)
  const sums = new Set((await target.db.sql`select stored_name from attachments`).map(row => row.stored_name))
  t.equal(sums.size, 12, 'each import stores its files under names of its own')

  const stranger = await register(target)
  t.equal((await call(target, stranger, 'GET', `/api/families/${answer.family.id}`)).statusCode, 403, 'the new family is the importer\'s alone')
})

t.test('an archive written before temperature readings existed still imports', async t => {
  const { archive } = await shared()
  const older = await rebuilt(archive, (_found, manifest, family) => {
    manifest.schemaVersion = family.schemaVersion = '20261124-150000-row-counts.sql'
    for (const child of family.children) {
      delete child.temperatures
      for (const illness of child.illnesses) delete illness.maxTemperatureC
    }
  })
  const target = await build(t, { env: OPEN })
  const importer = await register(target)
  const res = await importArchive(target, importer, older)
  t.equal(res.statusCode, 201, res.body)
  t.equal(res.json().counts.temperatures, 0)
  const view = await familyView(target, importer, res.json().family.id)
  const zoe = view.children.find((child: { name: string }) => child.name === 'Zoë')
  t.same(zoe.temperatures, [], 'no readings')
  t.match(zoe.illnesses[1], { diagnosis: 'Influenza', temperatureC: 39.6, maxTemperatureC: null }, 'the illness keeps the temperature it showed')
})

t.test('the command line imports an archive for a user named by e-mail', async t => {
  const { source, owner, familyId, archive } = await shared()
  const dir = tempDir(t)
  const file = path.join(dir, 'family.zip')
  writeFileSync(file, archive)

  const target = await build(t, { env: OPEN })
  const importer = await register(target)
  const env = { ...TEST_ENV, DATABASE_URL: target.db.url, UPLOAD_DIR: target.config.uploadDir, AVATAR_DIR: target.config.avatarDir }
  const run = await cli(['import', '--in', file, '--owner', importer.user.email.toUpperCase()], env)
  t.equal(run.code, 0, run.stderr)
  t.match(run.stdout, /^imported the family "Família Ødegård, \\"the first\\"" \(id \d+\) for .+: 2 children, 30 records, 8 files\n$/)
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

t.test('an import killed midway leaves no row, and only files that the orphan sweep removes', async t => {
  const { source, owner } = await shared()
  const family = await created(source, owner, '/api/families', { name: 'Large' })
  const child = await created(source, owner, '/api/children', { name: 'Big', dateOfBirth: '2020-01-01', sex: 'female', familyId: family.id })
  for (let index = 0; index < 40; index++) {
    const res = await upload(source, owner, `/api/children/${child.id}/attachments`, pdf(1024 * 1024), `scan ${index}.pdf`, 'application/pdf')
    if (res.statusCode !== 201) throw new Error(`upload answered ${res.statusCode}`)
  }
  const dir = tempDir(t)
  const file = path.join(dir, 'family.zip')
  writeFileSync(file, await exported(source, owner, family.id))

  const target = await build(t, { env: OPEN })
  const importer = await register(target)
  const before = await footprint(target)
  const env = { ...TEST_ENV, DATABASE_URL: target.db.url, UPLOAD_DIR: target.config.uploadDir, AVATAR_DIR: target.config.avatarDir }
  const { child: running, done } = startCli(['import', '--in', file, '--owner', importer.user.email], env)
  // Killed once it has begun to unpack files.
  while (readdirSync(target.config.uploadDir).length < 3) {
    if (running.exitCode !== null) break
    await new Promise(resolve => setTimeout(resolve, 5))
  }
  running.kill('SIGKILL')
  const run = await done
  t.equal(run.code, null, 'the import was killed before it finished')
  const left = readdirSync(target.config.uploadDir)
  t.ok(left.length > 0, `it left ${left.length} files behind`)
  const after = await footprint(target)
  t.same({ ...after, uploads: [] }, { ...before, uploads: [] }, 'and no row')
  const later = Date.now() + ORPHAN_AGE_MS + 60_000
  await sweepOrphans(target.config.uploadDir, names => storedNamesInUse(target.sql, names), later)
  t.same(readdirSync(target.config.uploadDir), before.uploads, 'the orphan sweep removes every file it left')
})

