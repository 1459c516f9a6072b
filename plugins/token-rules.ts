import type { FastifyRequest } from 'fastify'
import { errors } from '../lib/errors'
import type { TokenLimits } from './tokens'

/**
 * What personal access tokens may do on a route, beside what their scope and
 * family allow: `refused`, none (administration, and the account itself: its
 * password, profile, sessions and tokens); `unbound`, only a token bound to
 * no family (the route makes a family); `reads`, a POST that only reads,
 * which a read token may send.
 */
export type TokenRule = 'refused' | 'unbound' | 'reads'

declare module 'fastify' {
  interface FastifyContextConfig {
    personalTokens?: TokenRule
  }
}

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/**
 * Refuses (403) what a personal access token may not do on the request's
 * route. Decided from the route and the method alone, before the request is
 * validated or an upload read, so that no write of a read token runs, the
 * one-statement creates included. The family scope then treats a token bound
 * to a family as a member of no other.
 */
export function checkTokenRule (request: FastifyRequest, token: TokenLimits): void {
  const rule = request.routeOptions.config.personalTokens
  if (rule === 'refused') throw new errors.forbidden()
  if (rule === 'unbound' && token.familyId !== null) throw new errors.forbidden()
  if (token.scope === 'read' && WRITES.has(request.method) && rule !== 'reads') throw new errors.forbidden()
}
