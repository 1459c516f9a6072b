import t from 'tap'
import { randomBytes } from 'node:crypto'
import { readdirSync } from 'node:fs'
import sharp from 'sharp'
import { build, register } from './helper'
import { emptyEntries, exported, footprint, importArchive, OPEN, rebuilt, richFamily, unzip, zip } from './import-helpers'

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
  const many = emptyEntries(Array.from({ length: 100_001 }, (_, index) => `fhir/${index + 1}.json`))
  const justEnough = emptyEntries(Array.from({ length: 100_000 }, (_, index) => `fhir/${index + 1}.json`))

  const cases: Array<[string, Buffer, RegExp]> = [
    ['a zip bomb', bomb, /would unpack to more than 4 × its size/],
    ['an entry that climbs out', traversal, /an entry's name is not a safe path inside the archive \(invalid relative path: \.\.\/evil\.json\)/],
    ['an unexpected entry', await rebuilt(archive, found => { found.set('notes.txt', Buffer.from('hello')) }), /"notes\.txt" is not one an export writes/],
    ['more than 100,000 entries', many, /100001 entries, more than 100000/],
    ['exactly 100,000 entries, refused only for what they lack', justEnough, /no manifest\.json/],
    ['a newer schema version', await rebuilt(archive, (_found, manifest) => { manifest.schemaVersion = '99991231-235959-later.sql' }), /newer than this service's/],
    ['a truncated archive', archive.subarray(0, Math.floor(archive.length * 0.6)), /not a complete ZIP archive/],
    ['a file changed after export', await rebuilt(archive, found => { const bytes = Buffer.from(found.get(someFile) as Buffer); bytes[bytes.length - 20] ^= 1; found.set(someFile, bytes) }, true), /SHA-256 of files\/.* does not match the manifest/],
    ['a file missing', await rebuilt(archive, found => { found.delete(someFile) }), /names files\/.*, which the archive does not hold/],
    ['an entry left out of the manifest', await rebuilt(archive, found => { found.set('fhir/999.json', Buffer.from('{}')) }, true), /fhir\/999\.json is not in the manifest/],
    ['no manifest', await rebuilt(archive, found => { found.delete('manifest.json') }), /no manifest\.json/],
    ['a manifest that is not JSON', await (async () => { const copy = new Map(entries); copy.set('manifest.json', Buffer.from('{nope')); return zip(copy) })(), /manifest\.json is not valid JSON/],
    ['a record out of range', await rebuilt(archive, (_found, _manifest, family) => { family.children[1].measurements[2].heightCm = 999 }), /children\[1\]\.measurements\[2\]: heightCm must be <= 250/],
    ['a gestational age out of range', await rebuilt(archive, (_found, _manifest, family) => { family.children[0].child.gestationalAgeAtBirthWeeks = 45 }), /children\[0\]\.child: gestationalAgeAtBirthWeeks must be <= 44/],
    ['days of gestation without weeks', await rebuilt(archive, (_found, _manifest, family) => { family.children[1].child.gestationalAgeAtBirthDays = 3 }), /children\[1\]\.child: gestationalAgeAtBirthDays must be null when gestationalAgeAtBirthWeeks is/],
    ['a record before the child\'s birth', await rebuilt(archive, (_found, _manifest, family) => { family.children[0].visits[0].date = '2001-01-01' }), /children\[0\]\.visits\[0\]: date must not be before the child's date of birth/],
    ['a dose on a medication', await rebuilt(archive, (_found, _manifest, family) => { family.children[0].medicalEvents.find((event: { type: string }) => event.type === 'medication').doseNumber = 2 }), /children\[0\]\.medicalEvents\[\d+\]: doseNumber only for a vaccine/],
    ['a next dose due before the dose', await rebuilt(archive, (_found, _manifest, family) => { family.children[0].medicalEvents.find((event: { type: string }) => event.type === 'vaccine').nextDueDate = '2021-01-01' }), /children\[0\]\.medicalEvents\[\d+\]: nextDueDate must not be before date/],
    ['a temperature reading of an illness the child does not have', await rebuilt(archive, (_found, _manifest, family) => { family.children[0].temperatures[0].illnessId = 777777 }), /children\[0\]\.temperatures\[0\]: illnessId names no record of the child/],
    ['a temperature reading before the child\'s birth', await rebuilt(archive, (_found, _manifest, family) => { family.children[0].temperatures[0].takenAt = '2001-01-01T10:00:00.000Z' }), /children\[0\]\.temperatures\[0\]: takenAt must not be before the child's date of birth/],
    ['a temperature reading out of range', await rebuilt(archive, (_found, _manifest, family) => { family.children[0].temperatures[0].temperatureC = 45 }), /children\[0\]\.temperatures\[0\]: temperatureC must be <= 43/],
    ['a link to a visit the child does not have', await rebuilt(archive, (_found, _manifest, family) => { family.children[0].illnesses[0].visitId = 777777 }), /visitId names no record of the child/],
    ['a file whose bytes are not its type', await rebuilt(archive, found => { found.set(someFile, Buffer.from('<html><script>alert(1)</script></html>')) }), /content of files\/.* is not an accepted type \(image\/jpeg, .*application\/pdf\)/],
    ['a text the database cannot hold', await rebuilt(archive, (_found, _manifest, family) => { family.children[1].attachments[0].fileName = 'bad\u0000name.pdf' }), /family\.json: children\[1\]\.attachments\[0\]: fileName must not contain a NUL character/],
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

