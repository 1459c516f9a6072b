import t, { type Test } from 'tap'
import { childBundle, type ChildRecords } from '../domain/export/child-records'
import { issuesOf } from './fhir-validate'
import {
  resourceId,
  uuidV5,
  type Attachment,
  type Bundle,
  type FhirChild,
  type Condition,
  type DocumentReference,
  type Encounter,
  type MedicationStatement,
  type Observation,
  type Resource
} from '../lib/fhir'
import { bodyMassIndex } from '../kinds/measurements'
import type { Illness, MedicalEvent, Measurement, Visit } from './fhir-records'


function assertValid (t: Test, bundle: Bundle): void {
  t.same(issuesOf(bundle), [], 'the bundle validates')
  for (const { resource } of bundle.entry) {
    t.same(issuesOf(resource), [], `${resource.resourceType} validates`)
    for (const profile of resource.meta.profile ?? []) {
      t.same(issuesOf(resource, profile), [], `${resource.resourceType} meets ${profile}`)
    }
  }
}

const STAMP = '2024-07-01T09:30:00.000Z'
const TIMESTAMP = '2024-07-02T12:00:00.000Z'
const stamps = { createdAt: STAMP, updatedAt: STAMP }

const child: FhirChild = {
  id: 1, familyId: 1, name: 'Ada Lovelace', dateOfBirth: '2022-01-10', sex: 'female', avatarUrl: null,
  gestationalAgeAtBirthWeeks: null, gestationalAgeAtBirthDays: null, ...stamps
}

const visits: Visit[] = [
  { id: 1, childId: 1, date: '2024-01-10', type: 'wellness', provider: 'Dr. Osei', notes: 'Two-year check', ...stamps },
  { id: 2, childId: 1, date: '2023-03-02', type: 'sick', provider: null, notes: null, ...stamps },
  { id: 3, childId: 1, date: '2024-06-01', type: 'dental', provider: 'Smile Clinic', notes: null, ...stamps }
]

function measurement (id: number, measuredAt: string, values: Partial<Measurement>): Measurement {
  return { id, childId: 1, measuredAt, heightCm: null, weightKg: null, headCircumferenceCm: null, visitId: null, notes: null, ...stamps, ...values }
}

const measurements: Measurement[] = [
  measurement(1, '2022-01-10', { heightCm: 50.2, weightKg: 3.456, headCircumferenceCm: 34.5, notes: 'At birth' }),
  measurement(2, '2024-01-10', { heightCm: 86.4, weightKg: 12.1, visitId: 1 }),
  measurement(3, '2024-01-11', { heightCm: 86.6 }),
  measurement(4, '2024-06-01', { weightKg: 13.2, visitId: 3 }),
  measurement(5, '2023-03-02', { headCircumferenceCm: 47.1 })
]

function illness (id: number, values: Partial<Illness>): Illness {
  return {
    id, childId: 1, startDate: '2024-05-20', endDate: null, diagnosis: null, symptoms: null, medications: null,
    temperatureC: null, visitId: null, notes: null, status: 'current', ...stamps, ...values
  }
}

const illnesses: Illness[] = [
  illness(1, { diagnosis: 'Otitis media', symptoms: 'Ear pain', temperatureC: 38.6 }),
  illness(2, { startDate: '2023-03-01', endDate: '2023-03-06', status: 'finished', diagnosis: 'Influenza', medications: 'Paracetamol', visitId: 2 }),
  illness(3, { startDate: '2023-02-01', endDate: '2023-02-03', status: 'finished', temperatureC: 39.1, visitId: 2, notes: 'Fever only' }),
  illness(4, { startDate: '2024-06-20' })
]

function event (id: number, type: MedicalEvent['type'], name: string, visitId: number | null, dose: Partial<MedicalEvent> = {}): MedicalEvent {
  return {
    id, childId: 1, date: '2023-03-02', type, name, description: visitId === null ? null : 'Given at the visit', visitId,
    doseNumber: null, lotNumber: null, site: null, nextDueDate: null, ...stamps, ...dose
  }
}

const medicalEvents: MedicalEvent[] = [
  event(1, 'vaccine', 'MMR', null),
  event(2, 'vaccine', 'DTaP', 2, { doseNumber: 2, lotNumber: 'AB-1234; lot', site: 'Left thigh', nextDueDate: '2023-05-02' }),
  event(3, 'procedure', 'Ear examination', 2),
  event(4, 'medication', 'Amoxicillin', 2),
  event(5, 'medication', 'Vitamin D', null)
]

function attachment (id: number, values: Partial<Attachment>): Attachment {
  return {
    id, childId: 1, visitId: null, measurementId: null, illnessId: null, fileName: `scan-${id}.pdf`,
    contentType: 'application/pdf', sizeBytes: 1000 + id, url: `/uploads/${'a'.repeat(31)}${id}.pdf`, createdAt: STAMP, ...values
  }
}

const attachments: Attachment[] = [
  attachment(1, { visitId: 1, measurementId: 2, fileName: 'growth chart.png', contentType: 'image/png' }),
  attachment(2, {}),
  attachment(3, { visitId: 2, illnessId: 2 })
]

const records: ChildRecords = { child, measurements, visits, medicalEvents, illnesses, attachments }
const bundle = childBundle(records, { timestamp: TIMESTAMP })

const byId = new Map(bundle.entry.map(({ resource }) => [resource.id, resource]))

function find<R extends Resource> (id: string): R {
  const resource = byId.get(id)
  if (resource === undefined) throw new Error(`no resource ${id}`)
  return resource as R
}

const urlOf = (id: string): string => `urn:uuid:${id}`
const visitUrl = (visitId: number): string => urlOf(resourceId('visit', visitId))
const patientUrl = urlOf(resourceId('child', 1))

function observationsOf (measurementId: number): Map<string, Observation> {
  const parts = ['body-weight', 'body-height', 'head-circumference', 'bmi']
  return new Map(parts.flatMap(part => {
    const resource = byId.get(resourceId('measurement', measurementId, part))
    return resource === undefined ? [] : [[part, resource as Observation]]
  }))
}

t.test('the bundle and every resource validate against FHIR R4', async t => {
  t.equal(bundle.resourceType, 'Bundle')
  t.equal(bundle.type, 'collection')
  t.equal(bundle.timestamp, TIMESTAMP)
  assertValid(t, bundle)
})

t.test('one resource of each kind per record', async t => {
  const counts: Record<string, number> = {}
  for (const { resource } of bundle.entry) counts[resource.resourceType] = (counts[resource.resourceType] ?? 0) + 1
  t.same(counts, {
    Patient: 1,
    Encounter: 3,
    Observation: 12,
    Condition: 4,
    Immunization: 2,
    Procedure: 1,
    MedicationStatement: 2,
    DocumentReference: 3
  })
  t.equal(bundle.entry.length, 28)
  t.same([...observationsOf(1).keys()], ['body-weight', 'body-height', 'head-circumference', 'bmi'])
  t.same([...observationsOf(2).keys()], ['body-weight', 'body-height', 'bmi'])
  t.same([...observationsOf(3).keys()], ['body-height'])
  t.same([...observationsOf(4).keys()], ['body-weight'])
  t.same([...observationsOf(5).keys()], ['head-circumference'])
})

t.test('the Patient', async t => {
  const patient = bundle.entry[0].resource
  t.match(patient, { resourceType: 'Patient', name: [{ text: 'Ada Lovelace' }], birthDate: '2022-01-10', gender: 'female' })
  const other = childBundle({ ...records, child: { ...child, sex: 'other' } }, { timestamp: TIMESTAMP })
  t.match(other.entry[0].resource, { gender: 'other' })
})

t.test('vital signs: LOINC codes, UCUM units and the profile requirements', async t => {
  const expected: Array<[number, string, string, string, number]> = [
    [1, 'body-weight', '29463-7', 'kg', 3.456],
    [1, 'body-height', '8306-3', 'cm', 50.2],
    [1, 'head-circumference', '9843-4', 'cm', 34.5],
    [1, 'bmi', '39156-5', 'kg/m2', 13.71],
    [2, 'body-weight', '29463-7', 'kg', 12.1],
    [2, 'bmi', '39156-5', 'kg/m2', 16.21],
    [4, 'body-weight', '29463-7', 'kg', 13.2],
    [5, 'head-circumference', '9843-4', 'cm', 47.1]
  ]
  for (const [id, part, loinc, unit, value] of expected) {
    const observation = observationsOf(id).get(part)
    t.match(observation, {
      code: { coding: [{ system: 'http://loinc.org', code: loinc }] },
      valueQuantity: { value, system: 'http://unitsofmeasure.org', code: unit }
    }, `measurement ${id} ${part}`)
  }
  const temperature = find<Observation>(resourceId('illness', 1, 'body-temperature'))
  t.match(temperature, {
    code: { coding: [{ system: 'http://loinc.org', code: '8310-5' }] },
    valueQuantity: { value: 38.6, system: 'http://unitsofmeasure.org', code: 'Cel' },
    effectiveDateTime: '2024-05-20'
  })

  const observations = bundle.entry.map(({ resource }) => resource).filter((r): r is Observation => r.resourceType === 'Observation')
  t.equal(observations.length, 12)
  for (const observation of observations) {
    t.equal(observation.status, 'final')
    t.same(observation.category?.[0].coding, [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'vital-signs', display: 'Vital Signs' }])
    t.equal(observation.subject.reference, patientUrl)
    t.match(observation.effectiveDateTime, /^\d{4}-\d{2}-\d{2}$/)
    t.ok(observation.meta.profile?.includes('http://hl7.org/fhir/StructureDefinition/vitalsigns'), 'claims the vital-signs profile')
  }
  t.equal(observationsOf(2).get('body-weight')?.effectiveDateTime, '2024-01-10')
  t.same(observationsOf(1).get('body-weight')?.note, [{ text: 'At birth' }])
})

t.test('body length before 731 days of age, body height from 731 days', async t => {
  const day0 = observationsOf(1).get('body-height')
  const day730 = observationsOf(2).get('body-height')
  const day731 = observationsOf(3).get('body-height')
  t.equal(day0?.code.coding?.[0].code, '8306-3', 'day 0: body length')
  t.equal(day730?.code.coding?.[0].code, '8306-3', 'day 730: body length')
  t.equal(day731?.code.coding?.[0].code, '8302-2', 'day 731: body height')
  t.same(day730?.meta.profile, ['http://hl7.org/fhir/StructureDefinition/vitalsigns'], 'no R4 profile for body length')
  t.same(day731?.meta.profile, ['http://hl7.org/fhir/StructureDefinition/vitalsigns', 'http://hl7.org/fhir/StructureDefinition/bodyheight'])
  t.equal(day731?.valueQuantity.code, 'cm')
})

t.test('no time zone moves a date or the length/height switch', async t => {
  const zone = process.env.TZ
  t.teardown(() => {
    if (zone === undefined) delete process.env.TZ
    else process.env.TZ = zone
  })
  for (const tz of ['Pacific/Kiritimati', 'America/Adak', 'Asia/Kolkata']) {
    process.env.TZ = tz
    t.same(childBundle(records, { timestamp: TIMESTAMP }), bundle, tz)
  }
})

t.test('BMI from weight and height, 2 decimals, pointing to both', async t => {
  const weight = observationsOf(2).get('body-weight')
  const height = observationsOf(2).get('body-height')
  const bmi = observationsOf(2).get('bmi')
  t.equal(bmi?.valueQuantity.value, 16.21)
  t.equal(bmi?.valueQuantity.unit, 'kg/m2')
  t.same(bmi?.derivedFrom?.map(ref => ref.reference), [urlOf(weight?.id ?? ''), urlOf(height?.id ?? '')])
  t.equal(bodyMassIndex(12.345, 100), 12.35, 'half up on the decimal value')
  t.equal(bodyMassIndex(3.456, 50.2), 13.71)
})

t.test('illnesses: Conditions and their temperatures', async t => {
  const clinical = 'http://terminology.hl7.org/CodeSystem/condition-clinical'
  const current = find<Condition>(resourceId('illness', 1))
  t.match(current, {
    clinicalStatus: { coding: [{ system: clinical, code: 'active' }] },
    code: { text: 'Otitis media' },
    onsetDateTime: '2024-05-20',
    subject: { reference: patientUrl }
  })
  t.notOk('abatementDateTime' in current)
  t.same(current.evidence, [
    { code: [{ text: 'Ear pain' }] },
    { detail: [{ reference: urlOf(resourceId('illness', 1, 'body-temperature')), type: 'Observation' }] }
  ])

  const finished = find<Condition>(resourceId('illness', 2))
  t.match(finished, {
    clinicalStatus: { coding: [{ system: clinical, code: 'resolved' }] },
    code: { text: 'Influenza' },
    onsetDateTime: '2023-03-01',
    abatementDateTime: '2023-03-06',
    note: [{ text: 'Medications: Paracetamol' }]
  })
  t.notOk(byId.has(resourceId('illness', 2, 'body-temperature')), 'no temperature, no Observation')

  const undiagnosed = find<Condition>(resourceId('illness', 3))
  t.notOk('code' in undiagnosed, 'no diagnosis, no code')
  t.match(undiagnosed, { clinicalStatus: { coding: [{ code: 'resolved' }] }, abatementDateTime: '2023-02-03', note: [{ text: 'Fever only' }] })
  t.match(find<Observation>(resourceId('illness', 3, 'body-temperature')), { valueQuantity: { value: 39.1, code: 'Cel' }, effectiveDateTime: '2023-02-01' })

  const bare = find<Condition>(resourceId('illness', 4))
  t.match(bare, { clinicalStatus: { coding: [{ code: 'active' }] }, onsetDateTime: '2024-06-20' })
  t.notOk('evidence' in bare)
  t.notOk(byId.has(resourceId('illness', 4, 'body-temperature')))
})

t.test('visits: finished ambulatory Encounters', async t => {
  const encounter = find<Encounter>(resourceId('visit', 1))
  t.same(encounter.class, { system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode', code: 'AMB', display: 'ambulatory' })
  t.match(encounter, { status: 'finished', type: [{ text: 'wellness' }], period: { start: '2024-01-10' }, subject: { reference: patientUrl } })
  t.same(encounter.participant, [{ individual: { display: 'Dr. Osei' } }])
  const sick = find<Encounter>(resourceId('visit', 2))
  t.match(sick, { type: [{ text: 'sick' }], period: { start: '2023-03-02' } })
  t.notOk('participant' in sick)
})

t.test('medical events: Immunization, Procedure, MedicationStatement', async t => {
  t.match(find(resourceId('medical-event', 1)), {
    resourceType: 'Immunization', status: 'completed', vaccineCode: { text: 'MMR' }, occurrenceDateTime: '2023-03-02', patient: { reference: patientUrl }
  })
  t.match(find(resourceId('medical-event', 3)), {
    resourceType: 'Procedure', status: 'completed', code: { text: 'Ear examination' }, performedDateTime: '2023-03-02', subject: { reference: patientUrl }, note: [{ text: 'Given at the visit' }]
  })
  t.match(find(resourceId('medical-event', 5)), {
    resourceType: 'MedicationStatement', status: 'completed', medicationCodeableConcept: { text: 'Vitamin D' }, effectiveDateTime: '2023-03-02', subject: { reference: patientUrl }
  })
})

t.test('a vaccine\'s dose: protocolApplied with its number, lotNumber, site as text; none of them without', async t => {
  const dose = find(resourceId('medical-event', 2)) as unknown as Record<string, unknown>
  t.same(dose.protocolApplied, [{ doseNumberPositiveInt: 2 }])
  t.equal(dose.lotNumber, 'AB-1234; lot')
  t.same(dose.site, { text: 'Left thigh' })
  t.same(issuesOf(dose as unknown as Resource), [], 'validates with them')
  const plain = find(resourceId('medical-event', 1)) as unknown as Record<string, unknown>
  for (const field of ['protocolApplied', 'lotNumber', 'site']) t.notOk(field in plain, `no ${field} without a dose`)
})

t.test('attachments: DocumentReferences', async t => {
  const linked = find<DocumentReference>(resourceId('attachment', 1))
  t.match(linked, { status: 'current', subject: { reference: patientUrl }, date: STAMP })
  t.same(linked.content, [{
    attachment: { contentType: 'image/png', url: attachments[0].url, title: 'growth chart.png', size: 1001, creation: STAMP }
  }])
  t.same(linked.context?.related?.map(ref => ref.reference), [...observationsOf(2).values()].map(o => urlOf(o.id)), 'points to its measurement')
  const unlinked = find<DocumentReference>(resourceId('attachment', 2))
  t.notOk('context' in unlinked)
  const ill = find<DocumentReference>(resourceId('attachment', 3))
  t.same(ill.context?.related, [{ reference: urlOf(resourceId('illness', 2)), type: 'Condition' }], 'points to its illness')
})

t.test('records linked to a visit point to its Encounter', async t => {
  t.equal(observationsOf(2).get('body-weight')?.encounter?.reference, visitUrl(1))
  t.equal(observationsOf(2).get('bmi')?.encounter?.reference, visitUrl(1))
  t.equal(observationsOf(4).get('body-weight')?.encounter?.reference, visitUrl(3))
  t.equal(find<Condition>(resourceId('illness', 2)).encounter?.reference, visitUrl(2))
  t.equal(find<Observation>(resourceId('illness', 3, 'body-temperature')).encounter?.reference, visitUrl(2))
  t.match(find(resourceId('medical-event', 2)), { resourceType: 'Immunization', encounter: { reference: visitUrl(2) } })
  t.match(find(resourceId('medical-event', 3)), { resourceType: 'Procedure', encounter: { reference: visitUrl(2) } })
  t.equal(find<MedicationStatement>(resourceId('medical-event', 4)).context?.reference, visitUrl(2))
  t.same(find<DocumentReference>(resourceId('attachment', 1)).context?.encounter, [{ reference: visitUrl(1), type: 'Encounter' }])
  t.same(find<DocumentReference>(resourceId('attachment', 3)).context?.encounter, [{ reference: visitUrl(2), type: 'Encounter' }])

  t.notOk('encounter' in (observationsOf(1).get('body-weight') ?? {}), 'unlinked measurement')
  t.notOk('encounter' in find(resourceId('illness', 1)), 'unlinked illness')
  t.notOk('encounter' in find(resourceId('illness', 1, 'body-temperature')), 'unlinked temperature')
  t.notOk('encounter' in find(resourceId('medical-event', 1)), 'unlinked vaccine')
  t.notOk('context' in find(resourceId('medical-event', 5)), 'unlinked medication')
})

t.test('every reference resolves to an entry of the type it names', async t => {
  const types = new Map(bundle.entry.map(({ fullUrl, resource }) => [fullUrl, resource.resourceType]))
  const references: Array<{ reference: string, type?: string }> = []
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(walk)
    else if (typeof value === 'object' && value !== null) {
      if (typeof (value as { reference?: unknown }).reference === 'string') references.push(value as { reference: string })
      Object.values(value).forEach(walk)
    }
  }
  walk(bundle)
  t.ok(references.length > 40, `${references.length} references`)
  for (const { reference, type } of references) {
    t.equal(types.get(reference), type, `${reference} is a ${type}`)
  }
})

t.test('ids are stable, unique and consistent with fullUrls', async t => {
  const again = childBundle(records, { timestamp: '2025-01-01T00:00:00.000Z' })
  t.same(again.entry, bundle.entry, 'a second export gives the same entries')
  t.equal(again.timestamp, '2025-01-01T00:00:00.000Z')

  const uuids = bundle.entry.map(({ resource }) => resource.id)
  t.equal(new Set(uuids).size, uuids.length, 'no two entries share an id')
  for (const { fullUrl, resource } of bundle.entry) {
    t.equal(fullUrl, `urn:uuid:${resource.id}`)
    t.match(resource.id, /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'a version 5 UUID')
  }

  const sameNumber = [
    resourceId('child', 1), resourceId('visit', 1), resourceId('measurement', 1, 'body-weight'),
    resourceId('illness', 1), resourceId('medical-event', 1), resourceId('attachment', 1)
  ]
  t.equal(new Set(sameNumber).size, 6, 'kinds with the same numeric id differ')
  for (const id of sameNumber) t.ok(byId.has(id))
  t.equal(uuidV5('6ba7b810-9dad-11d1-80b4-00c04fd430c8', 'www.example.com'), '2ed6657d-e927-568b-95e1-2665a8aea6a2', 'RFC 9562 UUID v5')
})

t.test('a child without records is a valid bundle of one Patient', async t => {
  const empty = childBundle({ child, measurements: [], visits: [], medicalEvents: [], illnesses: [], attachments: [] }, { timestamp: TIMESTAMP })
  t.equal(empty.entry.length, 1)
  t.equal(empty.entry[0].resource.resourceType, 'Patient')
  t.same(empty.entry[0], bundle.entry[0])
  assertValid(t, empty)
})

t.test('a link to a visit outside the bundle is left out', async t => {
  const partial = childBundle({ ...records, visits: [] }, { timestamp: TIMESTAMP })
  t.notOk(partial.entry.some(({ resource }) => resource.resourceType === 'Encounter'))
  t.notOk(JSON.stringify(partial).includes(visitUrl(1)))
  t.notOk('context' in (partial.entry.find(({ resource }) => resource.id === resourceId('medical-event', 4))?.resource ?? {}))
  assertValid(t, partial)
})

/** A copy of a resource to break. */
function looseCopy (resource: Resource | undefined): Record<string, unknown> {
  return structuredClone(resource) as unknown as Record<string, unknown>
}

t.test('the validator reports invalid resources', async t => {
  const weight = looseCopy(observationsOf(2).get('body-weight'))
  t.same(issuesOf(weight), [], 'the original is valid')

  const noStatus = { ...weight, status: undefined }
  delete noStatus.status
  t.match(issuesOf(noStatus), [{ severity: 'error', expression: ['Observation.status'] }], 'missing status')
  t.match(issuesOf({ ...weight, effectiveDateTime: '10/01/2024' }), [{ severity: 'error' }], 'bad date')
  t.match(issuesOf({ ...weight, valueQuantity: { value: '12.1', unit: 'kg', system: 'http://unitsofmeasure.org', code: 'kg' } }), [{ severity: 'error' }], 'value as a string')
  t.match(issuesOf({ ...weight, colour: 'blue' }), [{ severity: 'error' }], 'unknown property')

  const { effectiveDateTime: _omitted, ...undated } = weight
  t.same(issuesOf(undated), [], 'the base Observation allows no date')
  t.match(issuesOf(undated, 'http://hl7.org/fhir/StructureDefinition/vitalsigns'), [{ severity: 'error' }], 'the vital-signs profile does not')
  const { subject: _subject, ...noSubject } = weight
  t.match(issuesOf(noSubject, 'http://hl7.org/fhir/StructureDefinition/vitalsigns'), [{ severity: 'error' }], 'nor a missing subject')
  const height = { ...weight, code: { coding: [{ system: 'http://loinc.org', code: '8302-2' }] } }
  t.match(issuesOf(height, 'http://hl7.org/fhir/StructureDefinition/bodyweight'), [{ severity: 'error' }], 'wrong code for the body weight profile')

  const patient = looseCopy(bundle.entry[0].resource)
  t.match(issuesOf({ ...patient, gender: 'girl' }), [{ severity: 'error', expression: ['Patient.gender'] }], 'a gender outside its value set')
  const encounter = looseCopy(find(resourceId('visit', 1)))
  t.match(issuesOf({ ...encounter, status: 'over' }), [{ severity: 'error', expression: ['Encounter.status'] }], 'a status outside its value set')
  const condition = looseCopy(find(resourceId('illness', 1)))
  const gone = { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/condition-clinical', code: 'gone' }] }
  t.match(issuesOf({ ...condition, clinicalStatus: gone }), [{ severity: 'error', expression: ['Condition.clinicalStatus'] }], 'an unknown clinical status')
  const elsewhere = { coding: [{ system: 'http://example.org/status', code: 'active' }] }
  t.match(issuesOf({ ...condition, clinicalStatus: elsewhere }), [{ severity: 'error' }], 'a clinical status from another system')
  const inGrams = { ...weight, valueQuantity: { value: 12100, unit: 'g', system: 'http://unitsofmeasure.org', code: 'g' } }
  t.same(issuesOf(inGrams, 'http://hl7.org/fhir/StructureDefinition/bodyweight'), [], 'grams are a body weight unit')
  const inCm = { ...weight, valueQuantity: { value: 12.1, unit: 'cm', system: 'http://unitsofmeasure.org', code: 'cm' } }
  t.match(issuesOf(inCm, 'http://hl7.org/fhir/StructureDefinition/bodyweight'), [{ severity: 'error' }], 'centimetres are not')

  const broken = structuredClone(bundle) as unknown as { entry: Array<{ resource: Record<string, unknown> }> }
  delete broken.entry[4].resource.code
  t.same(issuesOf(bundle), [], 'the bundle is valid')
  t.match(issuesOf(broken as unknown as Bundle), [{ severity: 'error', expression: ['Bundle.entry[4].resource.code'] }], 'an invalid entry makes the bundle invalid')
})
