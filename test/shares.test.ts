import t from 'tap'
import jsQR from 'jsqr'
import sharp from 'sharp'
import { bearer, build, call, familyOf, register } from './helper'
import { OPEN, type Json } from './import-helpers'
import {
  assertValidFhir, decrypt, http, listening, makeShare, payloadOf, recordedChild, requestManifest, viewLink
} from './share-helpers'

const ALL = ['growth', 'immunizations', 'illnesses', 'medications', 'visits', 'attachments']
const CHARTS: Record<string, string> = {
  'who-2006': 'WHO Child Growth Standards (2006)',
  'who-2007': 'WHO Reference 2007',
  'cdc-2000-infant': 'CDC 2000 growth charts, birth to 36 months',
  'cdc-2000': 'CDC 2000 growth charts, 2 to 20 years'
}
/** The growth scores that have a LOINC percentile code, as the FHIR export maps them. */
const PERCENTILES: Record<string, string> = { weightForHeight: '77606-2', bmiForAge: '59576-9', headCircumferenceForAge: '8289-1' }

const resources = (bundle: Json, type: string): Json[] => bundle.entry.map((e: Json) => e.resource).filter((r: Json) => r.resourceType === type)
const coded = (bundle: Json, loinc: string): Json[] => resources(bundle, 'Observation').filter(o => o.code.coding?.[0]?.code === loinc)

t.test('a viewer with nothing but the link reads the child\'s whole summary, as FHIR R4', async t => {
  const app = await build(t, { env: OPEN })
  const origin = await listening(app)
  const owner = await register(app)
  const child = await recordedChild(app, owner, familyOf(owner))
  const made = await makeShare(origin, owner, child.id, { label: 'Noor for Riverside Pediatrics', passcode: '2468', sections: ALL })
  t.equal(made.status, 201, made.text)
  const answer = made.json()
  t.equal(made.headers.get('location'), `/api/shares/${answer.id}`)
  t.equal(made.headers.get('cache-control'), 'no-store')
  t.match(answer, { childId: child.id, label: 'Noor for Riverside Pediatrics', sections: ALL, passcode: true, remainingAttempts: 10, status: 'active', accessCount: 0, accesses: [] })
  const link: string = answer.link

  // Only the link from here on.
  const payload = payloadOf(link)
  t.same(Object.keys(payload).sort(), ['exp', 'flag', 'key', 'label', 'url', 'v'])
  t.match(payload, { flag: 'P', label: 'Noor for Riverside Pediatrics', v: 1 })
  t.match(payload.key, /^[A-Za-z0-9_-]{43}$/, '32 random bytes, base64url')
  t.equal(Buffer.from(payload.key, 'base64url').length, 32)
  t.equal(payload.exp, Math.floor(Date.parse(answer.expiresAt) / 1000), 'exp is the expiry in seconds')
  t.match(payload.url, new RegExp(`^${origin}/api/shl/[A-Za-z0-9_-]{43}$`), 'an absolute manifest URL with a token of 256 bits')
  t.ok(payload.url.length <= 128)

  const manifest = await requestManifest(link, { recipient: 'Dr. Osei, Riverside Pediatrics', passcode: '2468' })
  t.equal(manifest.status, 200, manifest.text)
  t.equal(manifest.headers.get('cache-control'), 'no-store')
  const files = manifest.json().files
  t.equal(files.length, 1)
  t.match(files[0], { contentType: 'application/fhir+json', status: 'finalized', fhirVersion: '4.0.1' })
  t.match(files[0].embedded, /^[A-Za-z0-9_-]+\.\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/, 'a compact JWE with no encrypted key')
  const { header, content: bundle } = await decrypt(link, files[0].embedded)
  t.same(header, { alg: 'dir', enc: 'A256GCM', cty: 'application/fhir+json' })

  assertValidFhir(t, bundle)
  t.match(bundle, { resourceType: 'Bundle', type: 'document', identifier: { system: 'urn:ietf:rfc:3986' } })
  const [first, second] = bundle.entry
  t.equal(first.resource.resourceType, 'Composition', 'the Composition comes first')
  t.equal(second.resource.resourceType, 'Patient')
  const composition = first.resource
  t.match(composition, { status: 'final', type: { coding: [{ system: 'http://loinc.org', code: '60591-5' }] }, title: 'Noor for Riverside Pediatrics', author: [{ display: owner.user.name }] })
  t.equal(composition.subject.reference, second.fullUrl)
  t.same(composition.section.map((s: Json) => s.code.coding?.[0]?.code ?? s.code.text).sort(),
    ['10160-0', '48765-2', '11348-0', '11369-6', '11450-4', '46240-8', '47519-4', '8716-3', 'Attached documents'].sort(), 'the IPS sections the records fill')
  const urls = new Set(bundle.entry.map((e: Json) => e.fullUrl))
  const listed = composition.section.flatMap((s: Json) => (s.entry ?? []).map((r: Json) => r.reference))
  t.ok(listed.every((ref: string) => urls.has(ref)), 'every section entry is in the bundle')
  t.equal(listed.length, bundle.entry.length - 2, 'and every resource but the Composition and the Patient is in a section')
  t.match(second.resource, { name: [{ text: 'Noor <Haddad> & co' }], birthDate: '2022-02-01', gender: 'female' })
  t.ok(composition.section.every((s: Json) => s.text.div.startsWith('<div xmlns="http://www.w3.org/1999/xhtml">')))
  t.ok(JSON.stringify(composition.section).includes('Noor') === false, 'the narrative lists records, not the name')

  // What the record holds, as the routes answer it.
  const list = async (kind: string): Promise<Json[]> => (await call(app, owner, 'GET', `/api/children/${child.id}/${kind}?limit=1000`)).json().data
  const events = await list('medical-events')
  t.same(resources(bundle, 'Immunization').map(i => [i.occurrenceDateTime, i.vaccineCode.text]).sort(),
    events.filter(e => e.type === 'vaccine').map(e => [e.date, e.name]).sort(), 'every vaccine')
  t.match(resources(bundle, 'Immunization').find(i => i.vaccineCode.text === 'DTaP'), { lotNumber: 'L-77', protocolApplied: [{ doseNumberPositiveInt: 1 }] })
  t.same(resources(bundle, 'Procedure').map(p => p.code.text), ['Ear examination'])
  const illnesses = await list('illnesses')
  t.same(resources(bundle, 'Condition').map(c => [c.onsetDateTime, c.code.text, c.clinicalStatus.coding[0].code]).sort(),
    illnesses.map(i => [i.startDate, i.diagnosis, i.status === 'current' ? 'active' : 'resolved']).sort(), 'every illness')
  t.same(coded(bundle, '8310-5').map(o => o.valueQuantity.value).sort(), [37.1, 38.9], 'the fever reading and the temperature noted with an illness')
  t.same(resources(bundle, 'MedicationStatement').map(m => m.medicationCodeableConcept.text).sort(), ['Amoxicillin', 'Ibuprofen'])
  t.equal(resources(bundle, 'MedicationAdministration').length, 1)
  t.same(resources(bundle, 'Encounter').map(e => e.type[0].text).sort(), ['sick', 'wellness'])

  const measurements = await list('measurements')
  const weights = coded(bundle, '29463-7').map(o => [o.effectiveDateTime, o.valueQuantity.value]).sort()
  t.same(weights, measurements.filter(m => m.weightKg !== null).map(m => [m.measuredAt, m.weightKg]).sort(), 'every weight')
  const lengths = [...coded(bundle, '8306-3'), ...coded(bundle, '8302-2')].map(o => [o.effectiveDateTime, o.valueQuantity.value]).sort()
  t.same(lengths, measurements.filter(m => m.heightCm !== null).map(m => [m.measuredAt, m.heightCm]).sort(), 'every length and height')
  t.same(coded(bundle, '9843-4').map(o => o.valueQuantity.value).sort(), [34.2, 46.1], 'every head circumference')
  const growth = (await call(app, owner, 'GET', `/api/children/${child.id}/growth`)).json()
  let scores = 0
  for (const point of growth.points) {
    for (const [score, loinc] of Object.entries(PERCENTILES)) {
      const scored = point[score]
      const found = coded(bundle, loinc).filter(o => o.effectiveDateTime === point.measuredAt)
      if (scored === null) {
        t.same(found, [], `no ${score} on ${point.measuredAt}`)
        continue
      }
      scores += 1
      t.equal(found.length, 1, `${score} on ${point.measuredAt}`)
      t.equal(found[0].valueQuantity.value, scored.percentile, 'with its percentile')
      t.equal(found[0].method.text, CHARTS[scored.reference], 'and the chart that scored it')
    }
  }
  t.ok(scores >= 4, `${scores} scores, each with its chart`)

  const [document] = resources(bundle, 'DocumentReference')
  t.equal(document.content[0].attachment.title, 'ear scan.png')
  t.equal(document.content[0].attachment.data, child.file.toString('base64'), 'the file itself')
  t.notOk('url' in document.content[0].attachment, 'and not its address, a capability of the family')
  t.notOk(JSON.stringify(bundle).includes('/uploads/'), 'no stored file\'s address anywhere')

  // The same file at a location, when the viewer takes no embedded file that long.
  const small = await requestManifest(link, { recipient: 'Dr. Osei', passcode: '2468', embeddedLengthMax: 100 })
  t.equal(small.status, 200)
  const [located] = small.json().files
  t.notOk('embedded' in located)
  t.match(located.location, new RegExp(`^${origin}/api/shl/files/[A-Za-z0-9_-]{43}$`))
  t.equal((await http(located.location, { method: 'HEAD' })).status, 404, 'a HEAD does not use the location up')
  const fetched = await http(located.location)
  t.equal(fetched.status, 200)
  t.equal(fetched.headers.get('content-type'), 'application/jose')
  t.same((await decrypt(link, fetched.text)).content, bundle, 'the same summary')
  t.equal((await http(located.location)).status, 404, 'a location serves once')
  const large = await requestManifest(link, { recipient: 'Dr. Osei', passcode: '2468', embeddedLengthMax: files[0].embedded.length })
  t.ok('embedded' in large.json().files[0], 'a file as long as embeddedLengthMax is embedded')
  t.same(await viewLink(link, { recipient: 'Dr. Osei', passcode: '2468', embeddedLengthMax: 10 }), [bundle], 'the viewer\'s path through a location')

  // The owner sees every request in the link's access log.
  const shares = (await call(app, owner, 'GET', `/api/children/${child.id}/shares`)).json()
  t.equal(shares.meta.total, 1)
  const [share] = shares.data
  t.equal(share.accessCount, 4)
  t.same(share.accesses.map((a: Json) => [a.recipient, a.address, a.outcome]), [
    ['Dr. Osei', '127.0.0.1', 'served'], ['Dr. Osei', '127.0.0.1', 'served'], ['Dr. Osei', '127.0.0.1', 'served'],
    ['Dr. Osei, Riverside Pediatrics', '127.0.0.1', 'served']
  ], 'newest first')
  t.equal(share.lastAccessAt, share.accesses[0].at)
  t.equal((await call(app, owner, 'GET', `/api/shares/${share.id}`)).json().accessCount, 4)
})

t.test('the QR code decodes to the link, or to the viewer page of PUBLIC_URL', async t => {
  for (const publicUrl of [null, 'https://health.example.org/family']) {
    const app = await build(t, { env: { ...OPEN, ...(publicUrl === null ? {} : { PUBLIC_URL: `${publicUrl}/` }) } })
    const origin = await listening(app)
    const owner = await register(app)
    const child = await recordedChild(app, owner, familyOf(owner))
    const made = (await makeShare(origin, owner, child.id, { label: 'School nurse', sections: ['immunizations'] })).json()
    const prefix = 'data:image/png;base64,'
    t.ok(made.qr.startsWith(prefix), 'a PNG data URL')
    const { data, info } = await sharp(Buffer.from(made.qr.slice(prefix.length), 'base64')).ensureAlpha().raw().toBuffer({ resolveWithObject: true })
    const code = jsQR(new Uint8ClampedArray(data.buffer, data.byteOffset, data.length), info.width, info.height)
    t.ok(code !== null, 'jsQR finds a QR code')
    t.equal(code?.data, publicUrl === null ? made.link : `${publicUrl}/share#${made.link}`)
    const payload = payloadOf(made.link)
    t.notOk('flag' in payload, 'no flag without a passcode')
    if (publicUrl !== null) t.match(payload.url, new RegExp(`^${publicUrl}/api/shl/[A-Za-z0-9_-]{43}$`), 'the manifest URL on PUBLIC_URL')
  }
})

t.test('a summary holds the sections asked for, and all but attachments by default', async t => {
  const app = await build(t, { env: OPEN })
  const origin = await listening(app)
  const owner = await register(app)
  const child = await recordedChild(app, owner, familyOf(owner))
  const only = (await makeShare(origin, owner, child.id, { sections: ['immunizations'] })).json()
  t.same(only.sections, ['immunizations'])
  const [bundle] = await viewLink(only.link, { recipient: 'School nurse' })
  assertValidFhir(t, bundle)
  t.same([...new Set(bundle.entry.map((e: Json) => e.resource.resourceType))].sort(), ['Composition', 'Immunization', 'Patient'])
  t.same(bundle.entry[0].resource.section.map((s: Json) => s.title), ['Immunizations'])

  const usual = (await makeShare(origin, owner, child.id, {})).json()
  t.same(usual.sections, ['growth', 'immunizations', 'illnesses', 'medications', 'visits'])
  const [whole] = await viewLink(usual.link, { recipient: 'ER' })
  t.equal(resources(whole, 'DocumentReference').length, 0, 'no attachment unless asked')
  t.ok(resources(whole, 'Encounter').length === 2 && resources(whole, 'Condition').length === 2)

  // An empty section still shows, saying so; a snapshot does not follow the record.
  const other = await call(app, owner, 'POST', '/api/children', { name: 'Sam', dateOfBirth: '2024-01-01', sex: 'male', familyId: familyOf(owner) })
  const empty = (await makeShare(origin, owner, other.json().id, { sections: ['illnesses', 'visits'] })).json()
  await call(app, owner, 'POST', `/api/children/${other.json().id}/illnesses`, { startDate: '2024-02-01', diagnosis: 'Cold' })
  const [nothing] = await viewLink(empty.link, { recipient: 'ER' })
  assertValidFhir(t, nothing)
  t.same(nothing.entry[0].resource.section.map((s: Json) => [s.title, s.emptyReason?.coding[0].code]), [['Problems', 'nilknown'], ['Visits', 'nilknown']])
  t.equal(resources(nothing, 'Condition').length, 0, 'the illness recorded after the link is not in it')
})

t.test('a viewer is told nothing more by a bearer token: the link is the credential', async t => {
  const app = await build(t, { env: OPEN })
  const origin = await listening(app)
  const owner = await register(app)
  const stranger = await register(app)
  const child = await recordedChild(app, owner, familyOf(owner))
  const { link } = (await makeShare(origin, owner, child.id, { sections: ['growth'] })).json()
  const url = payloadOf(link).url
  const plain = await http(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ recipient: 'A' }) })
  const withToken = await http(url, { method: 'POST', headers: { ...bearer(stranger.accessToken), 'content-type': 'application/json' }, body: JSON.stringify({ recipient: 'A' }) })
  t.equal(plain.status, 200)
  t.equal(withToken.status, 200)
  t.same((await decrypt(link, withToken.json().files[0].embedded)).content, (await decrypt(link, plain.json().files[0].embedded)).content)
  const unknownProperty = await http(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ recipient: 'A', futureField: 1 }) })
  t.equal(unknownProperty.status, 200, 'a property of a later version of the protocol is ignored')
  const noRecipient = await http(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({}) })
  t.equal(noRecipient.status, 400)
  t.match(noRecipient.json(), { code: 'VALIDATION_ERROR', details: { issues: [{ path: '/body/recipient' }] } })
})
