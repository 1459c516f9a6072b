import type { FastifyInstance } from 'fastify'
import type { Db } from '../../db/client'
import { randomBytes } from 'node:crypto'
import { errors, invalidRequest } from '../../lib/errors'
import { frontEndPath, linkStartUrl } from '../../lib/oidc/redirect'
import { saveLink, type LinkMaker } from '../../sql/identity-links'

/** How long a link token lasts, in seconds: the user's own as long as a sign-in at the provider, an administrator's as long as an invite. */
export const LINK_TTL: Record<LinkMaker, number> = { user: 600, admin: 7 * 86_400 }

/** 404 when no identity provider is configured. */
export function providerConfigured (fastify: FastifyInstance): void {
  if (fastify.config.oidc === null) throw new errors.notFound('Sign-in with an identity provider')
}

/** A front end path of a request, checked and encoded (lib/oidc/redirect.ts): a 400 naming it (`/query/redirect`) otherwise. */
export function checkedRedirect (raw: string, at: string): string {
  const redirect = frontEndPath(raw)
  if (redirect === null) throw invalidRequest([{ path: at, message: 'must be a path on this service\'s origin: one / then no / or \\, without # or spaces' }])
  return redirect
}

/**
 * A new link token of a user, in place of the open one of the same maker,
 * and the address that starts the sign-in with it; the user's own is bound
 * to `browser`, the browser that asked for it.
 */
export async function issueLink (
  fastify: FastifyInstance, db: Db, link: { userId: number, madeBy: LinkMaker, browser: string | null, redirect: string }
): Promise<{ url: string, expiresAt: Date }> {
  const { config, tokens } = fastify
  const token = randomBytes(32).toString('base64url')
  const browserHash = link.browser === null ? null : tokens.hash(link.browser)
  const expiresAt = await saveLink(db, { userId: link.userId, madeBy: link.madeBy, tokenHash: tokens.hash(token), browserHash }, LINK_TTL[link.madeBy])
  // PUBLIC_URL is set whenever a provider is (io/oidc-config.ts).
  return { url: linkStartUrl(config.publicUrl ?? '', link.redirect, token), expiresAt }
}
