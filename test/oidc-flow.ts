import type { Test } from 'tap'
import { bearer, type App } from './helper'
import { Browser, CLIENT, startOidcProvider, testTls, type Account, type Tls } from './oidc-servers'

/**
 * A browser's sign-in with the identity provider, through the real routes
 * and a real oidc-provider (test/oidc-servers.ts): for the sign-in tests.
 */

/** Where the front end is: the provider sends the browser back to its /api/auth/oidc/callback. */
export const PUBLIC_URL = 'https://health.example.org'

export interface Provider {
  tls: Tls
  issuer: string
  accounts: Map<string, Account>
}

export async function certified (t: Test, accounts: Record<string, Account> = {}): Promise<Provider> {
  const tls = testTls(t)
  const map = new Map(Object.entries(accounts))
  const { issuer } = await startOidcProvider(t, tls, PUBLIC_URL, map)
  return { tls, issuer, accounts: map }
}

export function oidcEnv (provider: { tls: Tls, issuer: string }, env: Record<string, string> = {}): Record<string, string> {
  return {
    OIDC_ISSUER: provider.issuer,
    OIDC_CLIENT_ID: CLIENT.id,
    OIDC_CLIENT_SECRET: CLIENT.secret,
    OIDC_CA_FILE: provider.tls.caFile,
    OIDC_NAME: 'Pocket ID',
    PUBLIC_URL,
    ...env
  }
}

/** The cookie a browser keeps from an answer's Set-Cookie, or the one it had. */
export function keptCookie (setCookie: unknown, had = ''): string {
  const set = String(setCookie ?? '')
  return set === '' ? had : set.split(';')[0]
}

/** The app's answer to the browser at a start address (a path, or a full URL under PUBLIC_URL), and the cookie the browser then has. */
export async function open (app: App, address: string, cookie?: string) {
  const { pathname, search } = new URL(address, PUBLIC_URL)
  const res = await app.inject({ method: 'GET', url: pathname + search, headers: cookie === undefined || cookie === '' ? {} : { cookie } })
  return { res, location: String(res.headers.location), cookie: keptCookie(res.headers['set-cookie'], cookie) }
}

/** The app's answer to the browser at `/api/auth/oidc/start`, and the cookie it set. */
export async function start (app: App, redirect = '/home', cookie?: string) {
  return open(app, `/api/auth/oidc/start?redirect=${encodeURIComponent(redirect)}`, cookie)
}

/** The browser at the provider until it is sent back to the service: signs in as `subject`, or refuses. */
export async function atProvider (browser: Browser, url: string, subject: string, refuse = false): Promise<string> {
  for (let hops = 0; hops < 20; hops++) {
    if (url.startsWith(PUBLIC_URL)) return url
    const res = await browser.request(url)
    if (res.location !== null) {
      url = res.location
      continue
    }
    if (res.status !== 200 || !url.includes('/interaction/')) throw new Error(`the provider answered ${res.status} at ${url}: ${res.body.slice(0, 300)}`)
    if (refuse) {
      url = `${url}/abort`
      continue
    }
    const login = res.body.includes('name="prompt" value="login"')
    const next = await browser.request(url, login ? { prompt: 'login', login: subject, password: 'any' } : { prompt: 'consent' })
    if (next.location === null) throw new Error(`the provider answered ${next.status} to a form: ${next.body.slice(0, 300)}`)
    url = next.location
  }
  throw new Error('too many redirects at the provider')
}

/** The service's callback, as the browser reaches it with its cookie: where it sends the browser. */
export async function callback (app: App, url: string, cookie: string) {
  const { pathname, search } = new URL(url)
  const res = await app.inject({ method: 'GET', url: pathname + search, headers: cookie === '' ? {} : { cookie } })
  return { res, location: String(res.headers.location) }
}

export interface Finished {
  location: string
  fragment: URLSearchParams
}

function finished (location: string): Finished {
  return { location, fragment: new URLSearchParams(new URL(location).hash.slice(1)) }
}

/**
 * A whole sign-in from a start address (by default a plain start back to
 * /home): the start, the provider, the callback; the fragment the front end
 * gets. A start that sends the browser straight back ends there.
 */
export async function signIn (app: App, provider: Provider, subject: string, from: { address?: string, cookie?: string } = {}): Promise<Finished> {
  const begun = await open(app, from.address ?? '/api/auth/oidc/start?redirect=%2Fhome', from.cookie)
  if (begun.res.statusCode !== 302) throw new Error(`start answered ${begun.res.statusCode}: ${begun.res.body}`)
  if (begun.location.startsWith(PUBLIC_URL)) return finished(begun.location)
  const back = await atProvider(new Browser(provider.tls), begun.location, subject)
  const { res, location } = await callback(app, back, begun.cookie)
  if (res.statusCode !== 302) throw new Error(`callback answered ${res.statusCode}: ${res.body}`)
  return finished(location)
}

export async function exchange (app: App, code: string | null) {
  return app.inject({ method: 'POST', url: '/api/auth/oidc/exchange', payload: { code } })
}

/** The user a sign-in ended with: the exchange of its code; null when it ended without one. */
export async function signedInUser (app: App, done: Finished): Promise<{ id: number, email: string, role: string } | null> {
  const code = done.fragment.get('oidcCode')
  if (code === null) return null
  return (await exchange(app, code)).json().user
}

/** An invite of the admin's family for an e-mail, through the real route. */
export async function invite (app: App, admin: { accessToken: string }, email: string): Promise<string> {
  const me = (await app.inject({ method: 'GET', url: '/api/me', headers: bearer(admin.accessToken) })).json()
  const res = await app.inject({ method: 'POST', url: `/api/families/${me.families[0].id}/invites`, headers: bearer(admin.accessToken), payload: { email, role: 'member' } })
  return res.json().token
}

/** A user's own link token, asked for with a session: the answer, the address to open and the browser's cookie. */
export async function ownLink (app: App, accessToken: string, body: Record<string, unknown>, cookie?: string) {
  const res = await app.inject({
    method: 'POST', url: '/api/me/identities/link', payload: body, headers: { ...bearer(accessToken), ...(cookie === undefined ? {} : { cookie }) }
  })
  return { res, url: res.statusCode === 201 ? String(res.json().url) : '', cookie: keptCookie(res.headers['set-cookie'], cookie) }
}
