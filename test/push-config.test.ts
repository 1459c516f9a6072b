import t from 'tap'
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import webpush from 'web-push'
import { loadConfig } from '../io/config'
import { DEFAULT_SUBJECT, VAPID_FILE, vapidKeys } from '../io/vapid'
import { PRODUCTION, refused } from './config-helpers'
import { tempDir } from './temp-dir'

const KEYS = webpush.generateVAPIDKeys()
const OTHER = webpush.generateVAPIDKeys()

t.test('VAPID keys: configured ones are used, and checked at start', async t => {
  const config = loadConfig({ ...PRODUCTION, VAPID_PUBLIC_KEY: KEYS.publicKey, VAPID_PRIVATE_KEY: ` ${KEYS.privateKey} `, VAPID_SUBJECT: 'https://health.example.org' })
  t.same(config.vapid, { ...KEYS, subject: 'https://health.example.org' })
  t.same(vapidKeys(config), { ...KEYS, subject: 'https://health.example.org' })

  refused(t, { ...PRODUCTION, VAPID_PUBLIC_KEY: KEYS.publicKey }, 'VAPID_PRIVATE_KEY', /VAPID_PRIVATE_KEY must be set with VAPID_PUBLIC_KEY/)
  refused(t, { ...PRODUCTION, VAPID_PRIVATE_KEY: KEYS.privateKey }, 'VAPID_PUBLIC_KEY', /must be set with VAPID_PRIVATE_KEY/)
  const both = { ...PRODUCTION, VAPID_PUBLIC_KEY: KEYS.publicKey, VAPID_PRIVATE_KEY: KEYS.privateKey }
  refused(t, { ...both, VAPID_PUBLIC_KEY: KEYS.publicKey + '=' }, 'VAPID_PUBLIC_KEY', /base64url without padding/)
  refused(t, { ...both, VAPID_PUBLIC_KEY: Buffer.from(KEYS.publicKey, 'base64url').toString('base64') }, 'VAPID_PUBLIC_KEY', /base64url/)
  refused(t, { ...both, VAPID_PUBLIC_KEY: KEYS.privateKey }, 'VAPID_PUBLIC_KEY', /uncompressed P-256 point \(65 bytes starting with 0x04\), got 32 bytes/)
  const offCurve = Buffer.from(KEYS.publicKey, 'base64url')
  offCurve[64] ^= 1
  refused(t, { ...both, VAPID_PUBLIC_KEY: offCurve.toString('base64url') }, 'VAPID_PUBLIC_KEY', /not a point on the P-256 curve/)
  refused(t, { ...both, VAPID_PRIVATE_KEY: KEYS.publicKey }, 'VAPID_PRIVATE_KEY', /must be 32 bytes, got 65/)
  refused(t, { ...both, VAPID_PRIVATE_KEY: Buffer.alloc(32).toString('base64url') }, 'VAPID_PRIVATE_KEY', /not a valid P-256 private key/)
  refused(t, { ...both, VAPID_PRIVATE_KEY: 'not+base64url' }, 'VAPID_PRIVATE_KEY', /base64url/)
  refused(t, { ...both, VAPID_PRIVATE_KEY: OTHER.privateKey }, 'VAPID_PRIVATE_KEY', /VAPID_PRIVATE_KEY is not the private key of VAPID_PUBLIC_KEY/)
})

t.test('VAPID_SUBJECT: a mailto: address or an https: URL, by default from PUBLIC_URL', async t => {
  t.equal(loadConfig(PRODUCTION).vapid.subject, DEFAULT_SUBJECT)
  t.equal(DEFAULT_SUBJECT, 'mailto:admin@localhost')
  t.equal(loadConfig({ ...PRODUCTION, PUBLIC_URL: 'https://health.example.org/app/' }).vapid.subject, 'https://health.example.org', 'PUBLIC_URL\'s origin')
  t.equal(loadConfig({ ...PRODUCTION, PUBLIC_URL: 'http://health.example.org' }).vapid.subject, DEFAULT_SUBJECT, 'not an http: PUBLIC_URL')
  t.equal(loadConfig({ ...PRODUCTION, PUBLIC_URL: 'https://localhost:8443' }).vapid.subject, DEFAULT_SUBJECT, 'not a localhost PUBLIC_URL')
  t.equal(loadConfig({ ...PRODUCTION, PUBLIC_URL: 'https://a.example', VAPID_SUBJECT: 'mailto:ops@example.org' }).vapid.subject, 'mailto:ops@example.org', 'VAPID_SUBJECT wins')
  refused(t, { ...PRODUCTION, VAPID_SUBJECT: 'ops@example.org' }, 'VAPID_SUBJECT', /VAPID_SUBJECT must be a mailto: address or an https: URL, got "ops@example.org"/)
  refused(t, { ...PRODUCTION, VAPID_SUBJECT: 'http://example.org' }, 'VAPID_SUBJECT', /mailto: address or an https: URL/)
  refused(t, { ...PRODUCTION, VAPID_SUBJECT: 'mailto:nobody' }, 'VAPID_SUBJECT', /mailto:admin@example.org/)
  refused(t, { ...PRODUCTION, VAPID_SUBJECT: 'https://localhost' }, 'VAPID_SUBJECT', /localhost/)
})

t.test('in production without keys, Web Push is off and nothing is written', async t => {
  const dir = tempDir(t, 'child-health-vapid-')
  const config = loadConfig({ ...PRODUCTION, DATA_DIR: dir })
  t.same(config.vapid, { publicKey: null, privateKey: null, subject: DEFAULT_SUBJECT })
  t.equal(vapidKeys(config), null)
  t.notOk(existsSync(path.join(dir, VAPID_FILE)))
})

t.test('outside production, keys are made once under DATA_DIR, mode 0600', async t => {
  const dir = tempDir(t, 'child-health-vapid-')
  const config = loadConfig({ DATA_DIR: dir, JWT_SECRET: 'a'.repeat(32), JWT_REFRESH_SECRET: 'b'.repeat(32) })
  const file = path.join(dir, VAPID_FILE)
  t.notOk(existsSync(file), 'loading the configuration writes no keys: the command line does not need them')
  const made = vapidKeys(config)
  t.ok(made)
  t.equal(made!.subject, DEFAULT_SUBJECT)
  t.equal(statSync(file).mode & 0o777, 0o600, 'readable by its owner only')
  t.same(JSON.parse(readFileSync(file, 'utf8')), { publicKey: made!.publicKey, privateKey: made!.privateKey })
  t.same(vapidKeys(loadConfig({ DATA_DIR: dir })), made, 'a restart reads them back')
  const configured = loadConfig({ DATA_DIR: dir, VAPID_PUBLIC_KEY: KEYS.publicKey, VAPID_PRIVATE_KEY: KEYS.privateKey })
  t.equal(vapidKeys(configured)!.publicKey, KEYS.publicKey, 'configured keys win over the kept ones')

  writeFileSync(file, JSON.stringify({ publicKey: KEYS.publicKey, privateKey: OTHER.privateKey }))
  refused(t, {}, file, /holds no valid VAPID key pair: remove it/, () => vapidKeys(loadConfig({ DATA_DIR: dir })))
  writeFileSync(file, 'not json')
  refused(t, {}, file, /holds no valid VAPID key pair/, () => vapidKeys(loadConfig({ DATA_DIR: dir })))
})
