import { ConfigError } from './config-error'

/** The environment the settings are read from. */
export type Env = Record<string, string | undefined>

/** A setting's text, trimmed; undefined when unset or empty. */
export function text (env: Env, name: string): string | undefined {
  const value = env[name]?.trim()
  return value === undefined || value === '' ? undefined : value
}

export function integer (env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = text(env, name)
  if (raw === undefined) return fallback
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`)
  const value = Number(raw)
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${raw}`)
  return value
}

export function oneOf<T extends string> (env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = text(env, name)
  if (raw === undefined) return fallback
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(name, `must be one of ${allowed.join(', ')}, got "${raw}"`)
  }
  return raw as T
}

/** `true` or `false`. */
export function flag (env: Env, name: string, fallback: boolean): boolean {
  return oneOf(env, name, ['true', 'false'], fallback ? 'true' : 'false') === 'true'
}
