import { Type } from '@sinclair/typebox'
import {
  CLOCK_ETAG, ConditionalWrite, ITEM_ETAG, Id, IsoDate, PATCH_RULE, Pagination, StrictObject, conditionalRead, errorResponses, noContent, patchFields, operations
} from '../../lib/schemas'
import type { RegisteredKind } from '../../kinds'
import type { RecordTable } from '../../kinds/changes'
import { nounOf, type ParentSpec } from '../../kinds/kind'
import type { ScopeOptions } from '../../plugins/access'

/** A word with its article: `a visit`, `an illness`. */
function withArticle (word: string): string {
  return `${/^[aeiou]/.test(word) ? 'an' : 'a'} ${word}`
}

const ONE_STATEMENT = 'The token is checked first (401); the session, the family scope and the rules are checked in the statement that writes, after the body is validated: a malformed body is a 400 also for a revoked session, whose well-formed write is a 401 with nothing written.'

/** The family scopes of a kind's routes: a list's (its ETag of the child's clock, its answer kept), a create's, one record's. */
export function scopesOf (spec: RegisteredKind) {
  const underParent = (parent: ParentSpec) => ({ record: parent.kind.table as RecordTable, at: `params.${parent.param}` as const })
  return {
    list: (at: `params.${string}` | `query.${string}`): ScopeOptions => ({ target: { child: at }, name: 'Child', etag: 'child', cache: true }),
    create: (at: `params.${string}` | `body.${string}`): ScopeOptions => ({ target: { child: at }, name: 'Child' }),
    listParent: (parent: ParentSpec): ScopeOptions => ({ target: underParent(parent), name: parent.kind.singular, etag: 'child', cache: true }),
    createParent: (parent: ParentSpec): ScopeOptions => ({ target: underParent(parent), name: parent.kind.singular }),
    record: { target: { record: spec.table, at: 'params.id' }, name: spec.singular, etag: 'version', ifMatch: true, cache: true } satisfies ScopeOptions
  }
}

/**
 * The schemas of one kind's routes, one a route: under the child
 * (`/api/children/:childId/{kind}`), flat (`/api/{kind}`, `/api/{kind}/:id`),
 * and under the parent for a kind that has one.
 */
export function declarationsOf (spec: RegisteredKind) {
  const operation = operations([spec.path])
  const ref = Type.Ref(spec.schema.$id as string)
  const noun = nounOf(spec)
  const sortNames = Object.keys(spec.sorts).join(', ')
  const listQuery = {
    ...Pagination,
    sort: Type.Optional(Type.String({ description: `comma-separated fields among ${sortNames}, each optionally prefixed with - (default ${spec.defaultSort}); ties are broken by id` })),
    from: Type.Optional(IsoDate),
    to: Type.Optional(IsoDate),
    ...Object.fromEntries(Object.entries(spec.filters ?? {}).map(([name, filter]) => [name, Type.Optional(Type.String({ enum: [...filter.values] }))]))
  }
  const body = StrictObject(spec.fields)
  const createBody = StrictObject({ ...spec.fields, ...spec.createFields })
  const listRead = conditionalRead(`${spec.singular}List`, CLOCK_ETAG, 400, 401, 403, 404)
  const createResponses = { 201: spec.createSchema ?? ref, ...errorResponses(400, 401, 403, 404) }
  const writeResponses = (ok: object) => ({ ...ok, ...errorResponses(400, 401, 403, 404, 412) })
  const childParams = StrictObject({ childId: Id })
  const idParams = StrictObject({ id: Id })
  const createDescription = [spec.descriptions?.create, ONE_STATEMENT].filter(text => text !== undefined).join(' ')
  const listed = `A child's ${spec.path.replace('-', ' ')}`
  const parent = spec.parent
  const params = parent === undefined ? childParams : StrictObject({ [parent.param]: Id })
  const parentNoun = parent === undefined ? '' : nounOf(parent.kind)
  const parentName = parent?.kind.singular ?? ''

  return {
    listChild: operation(`listChild${spec.plural}`, listed, { description: spec.descriptions?.list, params: childParams, querystring: Type.Object(listQuery), ...listRead }),
    createChild: operation(`createChild${spec.singular}`, `Add ${withArticle(noun)} to a child`, { description: createDescription, params: childParams, body: createBody, response: createResponses }),
    list: operation(`list${spec.plural}`, `${listed}, by childId`, { description: spec.descriptions?.list, querystring: Type.Object({ childId: Id, ...listQuery }), ...listRead }),
    create: operation(`create${spec.singular}`, `Add ${withArticle(noun)} to the child named by childId`, { description: createDescription, body: StrictObject({ childId: Id, ...spec.fields, ...spec.createFields }), response: createResponses }),
    listParent: operation(`list${parentName}${spec.plural}`, `The ${noun}s of ${withArticle(parentNoun)}`, { description: spec.descriptions?.list, params, querystring: Type.Object(listQuery), ...listRead }),
    createParent: operation(`create${parentName}${spec.singular}`, `Add ${withArticle(noun)} to ${withArticle(parentNoun)}`, { description: spec.descriptions?.create, params, body: createBody, response: createResponses }),
    get: operation(`get${spec.singular}`, `One ${noun}`, { params: idParams, ...conditionalRead(spec.schema.$id as string, ITEM_ETAG, 400, 401, 403, 404) }),
    replace: operation(`replace${spec.singular}`, `Replace ${withArticle(noun)}; omitted optional fields become null`, { params: idParams, headers: ConditionalWrite, body, response: writeResponses({ 200: ref }) }),
    update: operation(`update${spec.singular}`, `Change some fields of ${withArticle(noun)}`, { description: `${PATCH_RULE} The rules between fields hold for the record as it would become.`, params: idParams, headers: ConditionalWrite, body: StrictObject(patchFields(spec.fields)), response: writeResponses({ 200: ref }) }),
    remove: operation(`delete${spec.singular}`, `Delete ${withArticle(noun)}`, { params: idParams, headers: ConditionalWrite, response: noContent('Deleted', 400, 401, 403, 404, 412) })
  }
}
