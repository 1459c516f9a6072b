import { createECDH, randomBytes } from 'node:crypto'
import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { ConfigError } from '../lib/config-error'
import { base64urlBytes, CURVE, keysMatch, pointProblem, scalarProblem } from '../lib/push/keys'

type Env = Record<string, string | undefined>

/** The VAPID settings as configured: both keys or neither, and the contact the push services are given. */
export interface VapidSettings {
  publicKey: string | null
  privateKey: string | null
  /** A mailto: address or an https: URL (RFC 8292's `sub`). */
  subject: string
}

/** The keys that sign Web Push requests (base64url, as web-push writes them) and their contact. */
export interface VapidKeys {
  /** The uncompressed P-256 point, 65 bytes: what browsers take as `applicationServerKey`. */
  publicKey: string
  privateKey: string
  subject: string
}

export const DEFAULT_SUBJECT = 'mailto:admin@localhost'

/** The file under DATA_DIR that keeps the keys made outside production. */
export const VAPID_FILE = 'vapid-keys.json'

function setting (env: Env, name: string): string | null {
  const value = env[name]?.trim()
  return value === undefined || value === '' ? null : value
}

/** The first problem of a key pair, with the setting it belongs to, or null. */
export function vapidPairProblem (publicKey: string, privateKey: string): { setting: string, problem: string } | null {
  const point = base64urlBytes(publicKey)
  if (point === null) return { setting: 'VAPID_PUBLIC_KEY', problem: 'must be base64url without padding, as npx web-push generate-vapid-keys writes it' }
  const pointIssue = pointProblem(point)
  if (pointIssue !== null) return { setting: 'VAPID_PUBLIC_KEY', problem: pointIssue }
  const scalar = base64urlBytes(privateKey)
  if (scalar === null) return { setting: 'VAPID_PRIVATE_KEY', problem: 'must be base64url without padding, as npx web-push generate-vapid-keys writes it' }
  const scalarIssue = scalarProblem(scalar)
  if (scalarIssue !== null) return { setting: 'VAPID_PRIVATE_KEY', problem: scalarIssue }
  if (!keysMatch(point, scalar)) return { setting: 'VAPID_PRIVATE_KEY', problem: 'is not the private key of VAPID_PUBLIC_KEY' }
  return null
}

/** What is wrong with a VAPID subject, or null. */
export function subjectProblem (subject: string): string | null {
  let url: URL
  try {
    url = new URL(subject)
  } catch {
    return 'must be a mailto: address or an https: URL'
  }
  if (url.protocol === 'mailto:') return /^[^@\s/]+@[^@\s/]+$/.test(url.pathname) ? null : 'must be a mailto: address like mailto:admin@example.org'
  if (url.protocol !== 'https:') return 'must be a mailto: address or an https: URL'
  // web-push warns on every message, and Apple's push service refuses them.
  if (url.hostname === 'localhost') return 'must not be a localhost URL: Apple\'s push service refuses it'
  return null
}

/** PUBLIC_URL's origin when it is a public https: URL, else a mailto: placeholder. */
function defaultSubject (publicUrl: string | null): string {
  if (publicUrl === null) return DEFAULT_SUBJECT
  const origin = new URL(publicUrl).origin
  return subjectProblem(origin) === null ? origin : DEFAULT_SUBJECT
}

/**
 * Reads and checks VAPID_PUBLIC_KEY, VAPID_PRIVATE_KEY and VAPID_SUBJECT, the
 * subject by default from PUBLIC_URL as the configuration read it. Throws
 * ConfigError naming the first bad one.
 */
export function vapidSettings (env: Env, publicUrl: string | null): VapidSettings {
  const publicKey = setting(env, 'VAPID_PUBLIC_KEY')
  const privateKey = setting(env, 'VAPID_PRIVATE_KEY')
  if (publicKey === null && privateKey !== null) throw new ConfigError('VAPID_PUBLIC_KEY', 'must be set with VAPID_PRIVATE_KEY')
  if (privateKey === null && publicKey !== null) throw new ConfigError('VAPID_PRIVATE_KEY', 'must be set with VAPID_PUBLIC_KEY')
  if (publicKey !== null && privateKey !== null) {
    const found = vapidPairProblem(publicKey, privateKey)
    if (found !== null) throw new ConfigError(found.setting, found.problem)
  }
  const subject = setting(env, 'VAPID_SUBJECT') ?? defaultSubject(publicUrl)
  const problem = subjectProblem(subject)
  if (problem !== null) throw new ConfigError('VAPID_SUBJECT', `${problem}, got "${subject}"`)
  return { publicKey, privateKey, subject }
}

/** The keys kept in the file, undefined when there is none; a file that holds no valid pair stops the start. */
function keptKeys (file: string): { publicKey: string, privateKey: string } | undefined {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
  let stored: { publicKey?: unknown, privateKey?: unknown } = {}
  try {
    stored = JSON.parse(text)
  } catch {}
  const { publicKey, privateKey } = stored ?? {}
  if (typeof publicKey !== 'string' || typeof privateKey !== 'string' || vapidPairProblem(publicKey, privateKey) !== null) {
    throw new ConfigError(file, 'holds no valid VAPID key pair: remove it to have new keys made (browsers subscribed with the old key then subscribe again)')
  }
  return { publicKey, privateKey }
}

/**
 * A new P-256 key pair as web-push's generateVAPIDKeys makes it, without
 * loading web-push: the uncompressed point, and the scalar padded to 32 bytes.
 */
function newKeyPair (): { publicKey: string, privateKey: string } {
  const ecdh = createECDH(CURVE)
  ecdh.generateKeys()
  const scalar = ecdh.getPrivateKey()
  return {
    publicKey: ecdh.getPublicKey().toString('base64url'),
    privateKey: Buffer.concat([Buffer.alloc(32 - scalar.length), scalar]).toString('base64url')
  }
}

/**
 * Keys made once and kept under DATA_DIR (mode 0600), so that restarts keep
 * browsers' subscriptions valid. Written under another name and linked into
 * place, so that two processes starting at once agree on one pair.
 */
function developmentKeys (dataDir: string): { publicKey: string, privateKey: string } {
  const file = path.join(dataDir, VAPID_FILE)
  const kept = keptKeys(file)
  if (kept !== undefined) return kept
  const made = newKeyPair()
  mkdirSync(dataDir, { recursive: true })
  const temporary = `${file}.${randomBytes(6).toString('hex')}.tmp`
  writeFileSync(temporary, JSON.stringify(made, null, 2) + '\n', { mode: 0o600 })
  try {
    linkSync(temporary, file)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
  } finally {
    rmSync(temporary, { force: true })
  }
  return keptKeys(file) ?? made
}

const resolved = new WeakMap<object, VapidKeys | null>()

/**
 * The VAPID keys of this configuration: the configured ones; outside
 * production without them, keys made once under DATA_DIR; in production
 * without them, null: Web Push is off.
 */
export function vapidKeys (config: { production: boolean, dataDir: string, vapid: VapidSettings }): VapidKeys | null {
  if (resolved.has(config)) return resolved.get(config) ?? null
  const { publicKey, privateKey, subject } = config.vapid
  const keys = publicKey !== null && privateKey !== null
    ? { publicKey, privateKey, subject }
    : config.production ? null : { ...developmentKeys(config.dataDir), subject }
  resolved.set(config, keys)
  return keys
}
