import { Type } from '@sinclair/typebox'
import { Secret } from '../../lib/schemas'

/**
 * A manifest request, as SMART Health Links define it. Unknown properties
 * are ignored, not refused: the specification lets later versions add
 * optional ones.
 */
export const ManifestRequest = Type.Object({
  recipient: Type.String({ minLength: 1, maxLength: 200, description: 'who asks, for the link\'s access log: a person or an organization, as the viewer names it' }),
  passcode: Type.Optional(Secret({ maxLength: 200, description: 'the passcode, when the link\'s flag holds P; never trimmed' })),
  embeddedLengthMax: Type.Optional(Type.Integer({ minimum: 0, maximum: 2147483647, description: 'a file longer than this comes as a location, not embedded' }))
}, { additionalProperties: true })

const about = {
  contentType: Type.String({ enum: ['application/fhir+json'] }),
  lastUpdated: Type.String({ format: 'date-time', description: 'when the summary was made' }),
  status: Type.String({ enum: ['finalized'], description: 'a link\'s summary never changes' }),
  fhirVersion: Type.String({ enum: ['4.0.1'] })
}

export const Manifest = Type.Object({
  files: Type.Array(Type.Union([
    Type.Object({ ...about, embedded: Type.String({ description: 'the summary as a compact JWE (alg dir, enc A256GCM, cty application/fhir+json), encrypted with the link\'s key' }) }, { additionalProperties: false }),
    Type.Object({ ...about, location: Type.String({ description: 'an address that answers the same JWE to one GET within an hour' }) }, { additionalProperties: false })
  ]))
}, { $id: 'ShlManifest', title: 'ShlManifest', description: 'The manifest of a SMART Health Link: its one file, the child\'s summary as an International Patient Summary style FHIR R4 document Bundle' })

export const PasscodeRefused = Type.Object({
  remainingAttempts: Type.Integer({ minimum: 0, maximum: 10, description: 'the wrong passcodes the link still takes, where the SMART Health Links specification puts it; the tenth wrong one kills the link' }),
  error: Type.String(),
  code: Type.String({ enum: ['PASSCODE_INVALID'] }),
  details: Type.Object({ remainingAttempts: Type.Integer({ minimum: 0, maximum: 10, description: 'the same number, where the error body keeps its details' }) })
}, {
  $id: 'ShlPasscodeRefused',
  title: 'ShlPasscodeRefused',
  description: 'The link needs its passcode, or the one given is wrong: the error body, with remainingAttempts beside its fields'
})

export const ManifestParams = Type.Object({
  token: Type.String({ description: 'the manifest\'s token, as in the link\'s url' })
})

export const FileParams = Type.Object({
  ticket: Type.String({ description: 'as in the manifest\'s location' })
})

export const JoseResponse = {
  description: 'The file as a compact JWE, to decrypt with the link\'s key',
  content: { 'application/jose': { schema: Type.String() } }
}
