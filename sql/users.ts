import type { Db } from '../db/client'

import type { Preferences } from '../lib/preferences'
import type { Role } from '../lib/roles'

export interface User {
  id: number
  email: string
  name: string
  role: Role
  createdAt: Date
}

export interface Credentials extends User {
  /** Null for an account made by signing in with the identity provider, until a password is set. */
  passwordHash: string | null
  disabled: boolean
}

export async function anyUserExists (db: Db): Promise<boolean> {
  const [row] = await db`select exists (select 1 from users) as found`
  return row.found
}

export async function emailTaken (db: Db, email: string, exceptUserId: number | null = null): Promise<boolean> {
  const [row] = await db`
    select exists (
      select 1 from users
      where lower(email) = lower(${email}) and id is distinct from ${exceptUserId}
    ) as found
  `
  return row.found
}

export async function insertUser (db: Db, user: { email: string, name: string, passwordHash: string | null, role: Role }): Promise<User> {
  const [row] = await db<User[]>`
    insert into users (email, name, password_hash, role)
    values (${user.email}, ${user.name}, ${user.passwordHash}, ${user.role})
    returning id, email, name, role, created_at as "createdAt"
  `
  return row
}

export async function findCredentials (db: Db, email: string): Promise<Credentials | undefined> {
  const [row] = await db<Credentials[]>`
    select id, email, name, role, created_at as "createdAt", password_hash as "passwordHash", disabled
    from users
    where lower(email) = lower(${email})
  `
  return row
}

export async function findCredentialsById (db: Db, id: number): Promise<Credentials | undefined> {
  const [row] = await db<Credentials[]>`
    select id, email, name, role, created_at as "createdAt", password_hash as "passwordHash", disabled
    from users
    where id = ${id}
  `
  return row
}

export async function findUser (db: Db, id: number): Promise<User | undefined> {
  const [row] = await db<User[]>`
    select id, email, name, role, created_at as "createdAt" from users where id = ${id}
  `
  return row
}

/** A user as they see themselves: with their preferences. */
export interface Profile extends User {
  preferences: Preferences
}

const profile = (db: Db) => db`id, email, name, role, created_at as "createdAt", json_build_object('units', units, 'language', language, 'timeZone', time_zone) as preferences`

export async function findProfile (db: Db, id: number): Promise<Profile | undefined> {
  const [row] = await db<Profile[]>`select ${profile(db)} from users where id = ${id}`
  return row
}

/** A user's preferences: what the texts made for them are written in. */
export async function preferencesOf (db: Db, id: number): Promise<Preferences | undefined> {
  const [row] = await db<Preferences[]>`select units, language, time_zone as "timeZone" from users where id = ${id}`
  return row
}

export async function updateProfile (db: Db, id: number, changes: { name?: string, email?: string, preferences?: Partial<Preferences> }): Promise<Profile> {
  const preferences = changes.preferences ?? {}
  const [row] = await db<Profile[]>`
    update users set
      name = coalesce(${changes.name ?? null}, name),
      email = coalesce(${changes.email ?? null}, email),
      units = coalesce(${preferences.units ?? null}, units),
      language = coalesce(${preferences.language ?? null}, language),
      time_zone = coalesce(${preferences.timeZone ?? null}, time_zone),
      updated_at = now()
    where id = ${id}
    returning ${profile(db)}
  `
  return row
}

export async function setPasswordHash (db: Db, id: number, passwordHash: string): Promise<void> {
  await db`update users set password_hash = ${passwordHash}, updated_at = now() where id = ${id}`
}

export async function recordLogin (db: Db, id: number): Promise<void> {
  await db`update users set last_login_at = now() where id = ${id}`
}
