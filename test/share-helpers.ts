import type { Test } from 'tap'
import { compactDecrypt } from 'jose'
import sharp from 'sharp'
import { assertValidBundle } from './fhir-validate'
import { bearer, type Pair } from './helper'
import { created, upload, type App, type Json } from './import-helpers'

/** What the share tests share: a child with every kind of record, a link made over HTTP, and a viewer that holds only the link. */

/** The app listening on 127.0.0.1, as a doctor's viewer reaches it; answers its origin. */
export async function listening (app: App): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('the app listens on no port')
  return `http://127.0.0.1:${address.port}`
}

export interface RecordedChild {
  id: number
  /** The bytes of the child's one attachment. */
  file: Buffer
}

/** A child with measurements, visits, vaccines, a procedure, medications, illnesses with a fever, a course of medicine and a file, made through the routes. */
export async function recordedChild (app: App, owner: Pair, familyId: number): Promise<RecordedChild> {
  const child = await created(app, owner, '/api/children', { name: 'Noor <Haddad> & co', dateOfBirth: '2022-02-01', sex: 'female', familyId })
  const base = `/api/children/${child.id}`
  const wellness = await created(app, owner, `${base}/visits`, {
    date: '2023-02-01', type: 'wellness', provider: 'Dr. Osei', measurement: { heightCm: 76.2, weightKg: 9.65, headCircumferenceCm: 46.1 }
  })
  const sick = await created(app, owner, `${base}/visits`, { date: '2023-09-10', type: 'sick' })
  await created(app, owner, `${base}/measurements`, { measuredAt: '2022-02-01', heightCm: 50.1, weightKg: 3.3, headCircumferenceCm: 34.2, notes: 'At birth' })
  await created(app, owner, `${base}/measurements`, { measuredAt: '2024-03-01', heightCm: 91.5, weightKg: 13.2 })
  await created(app, owner, `${base}/medical-events`, { date: '2022-04-01', type: 'vaccine', name: 'DTaP', doseNumber: 1, lotNumber: 'L-77', site: 'Left thigh' })
  await created(app, owner, `${base}/medical-events`, { date: '2023-02-01', type: 'vaccine', name: 'MMR', visitId: wellness.id })
  await created(app, owner, `${base}/medical-events`, { date: '2023-09-10', type: 'procedure', name: 'Ear examination', visitId: sick.id })
  await created(app, owner, `${base}/medical-events`, { date: '2023-09-10', type: 'medication', name: 'Amoxicillin', visitId: sick.id })
  const otitis = await created(app, owner, `${base}/illnesses`, { startDate: '2023-09-08', endDate: '2023-09-15', diagnosis: 'Otitis media', visitId: sick.id })
  await created(app, owner, `/api/illnesses/${otitis.id}/temperatures`, { takenAt: '2023-09-09T07:30:00+02:00', temperatureC: 38.9, method: 'ear' })
  await created(app, owner, `${base}/illnesses`, { startDate: '2024-03-01', diagnosis: 'Eczema', temperatureC: 37.1 })
  const course = await created(app, owner, `${base}/medicine-courses`, { name: 'Ibuprofen', doseAmount: 2.5, doseUnit: 'ml', minIntervalHours: 6, maxDosesPer24h: 4, startDate: '2023-09-09', endDate: '2023-09-12' })
  await created(app, owner, `/api/medicine-courses/${course.id}/doses`, { givenAt: '2023-09-09T08:00:00Z' })
  const file = await sharp({ create: { width: 4, height: 3, channels: 3, background: '#a3c' } }).png().toBuffer()
  const uploaded = await upload(app, owner, `${base}/attachments`, file, 'ear scan.png', 'image/png', { visitId: sick.id })
  if (uploaded.statusCode !== 201) throw new Error(`the upload answered ${uploaded.statusCode}: ${uploaded.body}`)
  return { id: child.id, file }
}

/** A date-time `days` from now. */
export function daysAhead (days: number): string {
  return new Date(Date.now() + days * 86_400_000).toISOString()
}

export interface HttpAnswer {
  status: number
  headers: Headers
  text: string
  json: () => Json
}

export async function http (url: string, init: RequestInit = {}): Promise<HttpAnswer> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) })
  const text = await res.text()
  return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) }
}

/** Makes a share link of a child over HTTP, as the family's front end would. */
export async function makeShare (origin: string, pair: Pair, childId: number, body: Record<string, unknown>): Promise<HttpAnswer> {
  return await http(`${origin}/api/children/${childId}/shares`, {
    method: 'POST',
    headers: { ...bearer(pair.accessToken), 'content-type': 'application/json' },
    body: JSON.stringify({ label: 'For Dr. Osei', expiresAt: daysAhead(7), ...body })
  })
}

/** The payload of a `shlink:/` URI. */
export function payloadOf (link: string): Json {
  if (!link.startsWith('shlink:/')) throw new Error(`not a SMART Health Link: ${link.slice(0, 20)}`)
  return JSON.parse(Buffer.from(link.slice('shlink:/'.length), 'base64url').toString('utf8'))
}

/** A manifest request, as a viewer sends it to the link's url. */
export async function requestManifest (link: string, body: Record<string, unknown>): Promise<HttpAnswer> {
  return await http(payloadOf(link).url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
}

/** A file of a manifest decrypted with the key of the link: its protected header and its JSON. */
export async function decrypt (link: string, jwe: string): Promise<{ header: Json, content: Json }> {
  const { plaintext, protectedHeader } = await compactDecrypt(jwe, Buffer.from(payloadOf(link).key, 'base64url'))
  return { header: protectedHeader, content: JSON.parse(Buffer.from(plaintext).toString('utf8')) }
}

/** The viewer's whole path with nothing but the link: the manifest, then every file, embedded or at its location, decrypted. */
export async function viewLink (link: string, body: Record<string, unknown>): Promise<Json[]> {
  const manifest = await requestManifest(link, body)
  if (manifest.status !== 200) throw new Error(`the manifest answered ${manifest.status}: ${manifest.text}`)
  const bundles: Json[] = []
  for (const file of manifest.json().files) {
    const jwe = file.embedded ?? (await http(file.location)).text
    bundles.push((await decrypt(link, jwe)).content)
  }
  return bundles
}

/** The bundle and each of its resources validate against FHIR R4, and each resource against the profiles it names. */
export const assertValidFhir = (t: Test, bundle: Json): void => assertValidBundle(t, bundle)
