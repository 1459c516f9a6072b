import { generateKeyPairSync } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import type { Test } from 'tap'
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose'
import forge from 'node-forge'
import { Agent, fetch } from 'undici'
import { tempDir } from './helper'

/**
 * Identity providers for the sign-in tests, over HTTPS on 127.0.0.1 with a
 * certificate authority the test makes: oidc-provider, a certified OpenID
 * Provider, for the flows; and a small provider of the test's own, signing
 * with jose, for the id tokens a certified one will not issue.
 */

export interface Tls {
  /** The CA's certificate (PEM), and the file that holds it (OIDC_CA_FILE). */
  ca: string
  caFile: string
  key: string
  cert: string
}

/** A CA of the test's own, and a certificate it signed for 127.0.0.1 (node-forge, with keys from node:crypto). */
export function testTls (t: Test): Tls {
  const dir = tempDir(t, 'child-health-tls-')
  const { pki, md } = forge
  const keys = () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
    return {
      pem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      privateKey: pki.privateKeyFromPem(privateKey.export({ type: 'pkcs1', format: 'pem' }).toString()),
      publicKey: pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }).toString())
    }
  }
  const certificate = (serial: string, publicKey: forge.pki.PublicKey, subject: string, issuer: string, extensions: object[]) => {
    const cert = pki.createCertificate()
    cert.publicKey = publicKey
    cert.serialNumber = serial
    cert.validity.notBefore = new Date(Date.now() - 60_000)
    cert.validity.notAfter = new Date(Date.now() + 2 * 86_400_000)
    cert.setSubject([{ name: 'commonName', value: subject }])
    cert.setIssuer([{ name: 'commonName', value: issuer }])
    cert.setExtensions(extensions)
    return cert
  }
  const ca = keys()
  const caCert = certificate('01', ca.publicKey, 'child-health test CA', 'child-health test CA', [
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true }
  ])
  caCert.sign(ca.privateKey, md.sha256.create())
  const server = keys()
  const serverCert = certificate('02', server.publicKey, '127.0.0.1', 'child-health test CA', [
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    { name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }
  ])
  serverCert.sign(ca.privateKey, md.sha256.create())
  const caPem = pki.certificateToPem(caCert)
  const caFile = path.join(dir, 'ca.pem')
  writeFileSync(caFile, caPem)
  return { ca: caPem, caFile, key: server.pem, cert: pki.certificateToPem(serverCert) }
}

/** An HTTPS server on 127.0.0.1 whose handler is set once its address is known; closed at teardown. */
async function httpsServer (t: Test, tls: Tls): Promise<{ server: https.Server, origin: string }> {
  const server = https.createServer({ key: tls.key, cert: tls.cert })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>(resolve => {
    server.closeAllConnections()
    server.close(() => resolve())
  }))
  return { server, origin: `https://127.0.0.1:${(server.address() as AddressInfo).port}` }
}

export interface Account {
  email?: string
  email_verified?: boolean
  name?: string
}

export const CLIENT = { id: 'child-health', secret: 'a client secret of the tests, long enough' }

/**
 * oidc-provider, with its development login and consent pages (any login
 * name signs in as that account), and one client: the service at
 * `publicUrl`. Accounts' claims are read from `accounts` when asked for.
 */
export async function startOidcProvider (t: Test, tls: Tls, publicUrl: string, accounts: Map<string, Account>): Promise<{ issuer: string }> {
  const { default: Provider } = await import('oidc-provider')
  const { server, origin } = await httpsServer(t, tls)
  const { privateKey } = await generateKeyPair('RS256', { extractable: true })
  const provider = new Provider(origin, {
    clients: [{
      client_id: CLIENT.id,
      client_secret: CLIENT.secret,
      redirect_uris: [`${publicUrl}/api/auth/oidc/callback`],
      response_types: ['code'],
      grant_types: ['authorization_code']
    }],
    jwks: { keys: [{ ...(await exportJWK(privateKey)), alg: 'RS256', use: 'sig', kid: 'test' }] as never },
    cookies: { keys: ['a cookie key of the tests'] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    pkce: { required: () => true },
    async findAccount (_ctx, id) {
      return {
        accountId: id,
        async claims () { return { sub: id, ...(accounts.get(id) ?? {}) } }
      }
    }
  })
  // Its warnings about development pages and keys are for a real deployment.
  provider.on('server_error', (_ctx, error) => { console.error(error) })
  server.on('request', provider.callback())
  return { issuer: origin }
}

/** What the provider of the test's own puts in, or does to, its id tokens. */
export interface Forgery {
  claims?: Record<string, unknown>
  /** Signs with a key that is not in the provider's JWKS. */
  foreignKey?: boolean
}

/**
 * A small OpenID provider of the test's own: discovery, JWKS, an
 * authorization endpoint that signs in `subject` at once, and a token
 * endpoint whose id token is signed with jose, made as `forgery` says.
 */
export async function startForgingProvider (t: Test, tls: Tls, forgery: () => Forgery): Promise<{ issuer: string }> {
  const { server, origin } = await httpsServer(t, tls)
  const keys = await generateKeyPair('RS256', { extractable: true })
  const foreign = await generateKeyPair('RS256')
  const jwk: JWK = { ...(await exportJWK(keys.publicKey)), alg: 'RS256', use: 'sig', kid: 'k1' }
  const issued = new Map<string, { nonce: string, clientId: string }>()
  server.on('request', (req, res) => {
    const url = new URL(req.url ?? '/', origin)
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(body))
    }
    if (url.pathname === '/.well-known/openid-configuration') {
      return json(200, {
        issuer: origin,
        authorization_endpoint: `${origin}/authorize`,
        token_endpoint: `${origin}/token`,
        jwks_uri: `${origin}/jwks`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256'],
        code_challenge_methods_supported: ['S256']
      })
    }
    if (url.pathname === '/jwks') return json(200, { keys: [jwk] })
    if (url.pathname === '/authorize') {
      const code = `code-${Math.random().toString(36).slice(2)}`
      issued.set(code, { nonce: url.searchParams.get('nonce') ?? '', clientId: url.searchParams.get('client_id') ?? '' })
      const back = new URL(url.searchParams.get('redirect_uri') ?? '')
      back.searchParams.set('code', code)
      back.searchParams.set('state', url.searchParams.get('state') ?? '')
      res.writeHead(302, { location: back.href }).end()
      return
    }
    if (url.pathname === '/token' && req.method === 'POST') {
      let body = ''
      req.on('data', chunk => { body += chunk })
      req.on('end', () => {
        const code = new URLSearchParams(body).get('code') ?? ''
        const grant = issued.get(code)
        issued.delete(code)
        if (grant === undefined) return json(400, { error: 'invalid_grant' })
        const made = forgery()
        const now = Math.floor(Date.now() / 1000)
        const claims = {
          iss: origin, aud: grant.clientId, iat: now, exp: now + 300,
          sub: 'forged-subject', email: 'forged@example.org', email_verified: true, nonce: grant.nonce,
          ...made.claims
        }
        new SignJWT(JSON.parse(JSON.stringify(claims)))
          .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
          .sign(made.foreignKey === true ? foreign.privateKey : keys.privateKey)
          .then(idToken => json(200, { access_token: 'an-access-token', token_type: 'Bearer', expires_in: 300, id_token: idToken }))
          .catch(error => json(500, { error: String(error) }))
      })
      return
    }
    json(404, { error: 'not_found' })
  })
  return { issuer: origin }
}

/** A browser at the provider: it keeps cookies by origin, trusts the test's CA and follows no redirect by itself. */
export class Browser {
  private readonly jar = new Map<string, Map<string, string>>()
  private readonly dispatcher: Agent

  constructor (tls: Tls) {
    this.dispatcher = new Agent({ connect: { ca: tls.ca } })
  }

  private cookieHeader (origin: string): string {
    return [...(this.jar.get(origin) ?? new Map()).entries()].map(([name, value]) => `${name}=${value}`).join('; ')
  }

  private keep (origin: string, setCookies: string[]): void {
    const jar = this.jar.get(origin) ?? new Map<string, string>()
    for (const line of setCookies) {
      const [pair] = line.split(';')
      const at = pair.indexOf('=')
      jar.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim())
    }
    this.jar.set(origin, jar)
  }

  async request (url: string, form?: Record<string, string>): Promise<{ status: number, location: string | null, body: string }> {
    const origin = new URL(url).origin
    const res = await fetch(url, {
      method: form === undefined ? 'GET' : 'POST',
      redirect: 'manual',
      dispatcher: this.dispatcher,
      headers: { cookie: this.cookieHeader(origin), ...(form === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }) },
      ...(form === undefined ? {} : { body: new URLSearchParams(form).toString() })
    })
    this.keep(origin, res.headers.getSetCookie())
    const location = res.headers.get('location')
    return { status: res.status, location: location === null ? null : new URL(location, url).href, body: await res.text() }
  }
}
