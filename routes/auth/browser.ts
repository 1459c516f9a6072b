import type { FastifyReply, FastifyRequest } from 'fastify'
import { randomBytes } from 'node:crypto'

/** The cookie that binds a sign-in, and a user's own link token, to the browser that asked for it. */
const BROWSER_COOKIE = 'oidc_browser'
const COOKIE_VALUE = /^[A-Za-z0-9_-]{43}$/

/** The browser's cookie, when it sent a well-formed one. */
export function browserOf (request: FastifyRequest): string | null {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const [name, value] = part.trim().split('=')
    if (name === BROWSER_COOKIE && value !== undefined && COOKIE_VALUE.test(value)) return value
  }
  return null
}

/** The browser's cookie, or a new one. */
export function browserOrNew (request: FastifyRequest): string {
  return browserOf(request) ?? randomBytes(32).toString('base64url')
}

/**
 * Sets the browser's cookie for `seconds`. It goes back only to the sign-in's
 * routes, under PUBLIC_URL's path when the proxy serves the API below one.
 */
export function keepBrowser (reply: FastifyReply, publicUrl: string, browser: string, seconds: number): FastifyReply {
  const path = `${publicUrl === '' ? '' : new URL(publicUrl).pathname.replace(/\/$/, '')}/api/auth/oidc`
  const secure = publicUrl.startsWith('https:') ? '; Secure' : ''
  return reply.header('set-cookie', `${BROWSER_COOKIE}=${browser}; Path=${path}; Max-Age=${seconds}; HttpOnly; SameSite=Lax${secure}`)
}
