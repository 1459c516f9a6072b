import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync } from 'node:fs'
import path from 'node:path'
import { freePort } from '../../../db/embedded'
import { startProcess, stopProcess, waitForHttp } from '../processes'
import { baseEnv, startService } from '../service'

/** How often a starting process's health is asked: its start time is to within this. */
export const POLL_MS = 10

/** One running process of a peer. */
export interface Started {
  url: string
  pid: number
  /** Milliseconds from the spawn to the first 2xx of its health route. */
  startMs: number
  stop: () => Promise<void>
}

/** A child and its measurements as both peers are given them. */
export interface ChildInput { name: string, dateOfBirth: string, sex: 'female' | 'male' }
export interface MeasurementInput { date: string, heightCm: number, weightKg: number, headCm: number | null }

/**
 * One side of the comparison: how it starts, and its API for the seeding and
 * the loads. Both serve the list at the same path,
 * `/api/children/:childId/measurements?limit=100`.
 */
export interface Peer {
  label: string
  /** A fresh process on its database; `name` tells the processes of a run apart. */
  start: (name: string) => Promise<Started>
  /** Registers the run's one user, the first of its database; its access token. */
  register: (url: string) => Promise<string>
  /** A fresh access token of that user. */
  login: (url: string) => Promise<string>
  createChild: (url: string, token: string, child: ChildInput) => Promise<number>
  /** The body of a measurement's creation. */
  measurementBody: (m: MeasurementInput) => Record<string, unknown>
  /** The rows of a list's answer. */
  rowsOf: (answer: any) => unknown[]
}

export const EMAIL = 'parent@example.org'
/** Strong enough for both: Trajectory asks for a capital, a digit and a symbol. */
export const PASSWORD = 'Bench-Password-2024!'

/** A JSON request; an answer other than `expected` throws with its text. */
export async function call (url: string, method: string, token: string | null, body: unknown, expected: number): Promise<any> {
  const res = await fetch(url, {
    method,
    headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000)
  })
  const text = await res.text()
  if (res.status !== expected) throw new Error(`${method} ${new URL(url).pathname} answered ${res.status}: ${text.slice(0, 300)}`)
  return text === '' ? null : JSON.parse(text)
}

/** The built service, started as the bench starts it (bench/lib/service.ts). */
export function servicePeer (databaseUrl: string, dir: string): Peer {
  return {
    label: 'this service',
    start: name => startService(databaseUrl, dir, { name, pollMs: POLL_MS }),
    register: async url => (await call(`${url}/api/auth/register`, 'POST', null, { email: EMAIL, password: PASSWORD, name: 'Parent' }, 201)).accessToken,
    login: async url => (await call(`${url}/api/auth/login`, 'POST', null, { email: EMAIL, password: PASSWORD }, 200)).accessToken,
    createChild: async (url, token, child) => (await call(`${url}/api/children`, 'POST', token, { name: child.name, dateOfBirth: child.dateOfBirth, sex: child.sex }, 201)).id,
    measurementBody: m => ({ measuredAt: m.date, heightCm: m.heightCm, weightKg: m.weightKg, ...(m.headCm === null ? {} : { headCircumferenceCm: m.headCm }) }),
    rowsOf: answer => answer.data
  }
}

/** Where a built Trajectory backend is: TRAJECTORY_DIR, its backend folder or the checkout above it. */
export function trajectoryBackend (): string {
  const given = process.env.TRAJECTORY_DIR
  if (given === undefined || given === '') throw new Error('TRAJECTORY_DIR is not set: make one with bench/peer/prepare-trajectory.sh (see bench/README.md)')
  for (const dir of [given, path.join(given, 'backend')]) {
    if (existsSync(path.join(dir, 'dist', 'index.js'))) return path.resolve(dir)
  }
  throw new Error(`${given} holds no built Trajectory backend (dist/index.js): run bench/peer/prepare-trajectory.sh`)
}

/**
 * Trajectory's backend (`node dist/index.js`, its production start) with
 * NODE_ENV=production and LOG_LEVEL=info, the quietest it has: it still
 * prints a line for every request, which the bench reads as a log collector would.
 * Its start applies its migrations; its health route is `GET /health`.
 */
export function trajectoryPeer (backendDir: string, databaseUrl: string, dir: string): Peer {
  const secrets = { JWT_SECRET: randomBytes(48).toString('base64url'), JWT_REFRESH_SECRET: randomBytes(48).toString('base64url') }
  return {
    label: 'Trajectory',
    start: async name => {
      const port = await freePort()
      const dataDir = path.join(dir, name)
      for (const sub of ['uploads', 'avatars']) mkdirSync(path.join(dataDir, sub), { recursive: true })
      const env = {
        ...baseEnv(),
        NODE_ENV: 'production',
        LOG_LEVEL: 'info',
        HOST: '127.0.0.1',
        APP_PORT: String(port),
        DATABASE_URL: databaseUrl,
        UPLOAD_DIR: path.join(dataDir, 'uploads'),
        AVATAR_DIR: path.join(dataDir, 'avatars'),
        ...secrets
      }
      const spawnedAt = performance.now()
      const running = startProcess(`Trajectory (${name})`, ['dist/index.js'], env, backendDir)
      const url = `http://127.0.0.1:${port}`
      await waitForHttp(running, `${url}/health`, 60_000, POLL_MS)
      const startMs = Math.round(performance.now() - spawnedAt)
      return { url, pid: running.child.pid as number, startMs, stop: () => stopProcess(running) }
    },
    // Its first user needs the registration code it makes on request while it has no user.
    register: async url => {
      const { data } = await call(`${url}/api/auth/generate-registration-code`, 'POST', null, undefined, 200)
      return (await call(`${url}/api/auth/register`, 'POST', null, { username: 'parent', email: EMAIL, password: PASSWORD, registrationCode: data.code }, 201)).data.accessToken
    },
    // Two sessions of a user opened in the same second get the same refresh
    // token, which its sessions table refuses (409): its logins are far apart.
    login: async url => (await call(`${url}/api/auth/login`, 'POST', null, { username: 'parent', password: PASSWORD }, 200)).data.accessToken,
    createChild: async (url, token, child) => (await call(`${url}/api/children`, 'POST', token, { name: child.name, date_of_birth: child.dateOfBirth, gender: child.sex }, 201)).data.id,
    measurementBody: m => ({ measurement_date: m.date, height_value: m.heightCm, weight_value: m.weightKg, ...(m.headCm === null ? {} : { head_circumference_value: m.headCm }) }),
    rowsOf: answer => answer.data
  }
}
